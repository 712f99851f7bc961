// Package servicetest checks what an orgadmin Service guarantees on a
// real store beyond what the storage contract says of each call: the
// adapters' tests run it, each on its own database.
//
//   - RunRaces: concurrent operations through one Service (the same
//     username created in several spellings, a configuration set by many,
//     tokens and sessions created while their user is deleted).
//   - RunShared: two processes, each with a Store of its own over one
//     database, see each other's revocations and deletions at once.
//   - RunFaults: what the API answers, and what a store keeps, when the
//     network between the service and its database fails (a toxiproxy in
//     between).
//   - Benchmarks and Scale: the operations measured through a Service on
//     any store.
//   - Counter and Snapshot: a store observed from the outside, for tests
//     that must prove a refused request stored nothing.
package servicetest
