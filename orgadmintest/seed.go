package orgadmintest

import (
	"slices"

	"github.com/orgadmin/orgadmin"
)

// cloneSeed returns a copy of sd that shares no memory with it.
func cloneSeed(sd orgadmin.Seed) orgadmin.Seed {
	sd.Organizations = slices.Clone(sd.Organizations)
	for i := range sd.Organizations {
		org := &sd.Organizations[i]
		org.Users = slices.Clone(org.Users)
		for j := range org.Users {
			u := &org.Users[j]
			u.Privileges = slices.Clone(u.Privileges)
			u.Ducklings = slices.Clone(u.Ducklings)
			u.Tokens = slices.Clone(u.Tokens)
			for k := range u.Tokens {
				u.Tokens[k].TTL = clonePtr(u.Tokens[k].TTL)
			}
			if u.Instances != nil {
				in := *u.Instances
				in.ReadWrite = cloneSide(in.ReadWrite)
				in.ReadScaling = cloneSide(in.ReadScaling)
				u.Instances = &in
			}
		}
		org.Dives = slices.Clone(org.Dives)
		for j := range org.Dives {
			d := &org.Dives[j]
			d.Version = clonePtr(d.Version)
			d.RequiredResources = slices.Clone(d.RequiredResources)
		}
	}
	return sd
}

func cloneSide(side *orgadmin.SeedInstanceSide) *orgadmin.SeedInstanceSide {
	if side == nil {
		return nil
	}
	c := *side
	c.FlockSize = clonePtr(c.FlockSize)
	c.CooldownSeconds = clonePtr(c.CooldownSeconds)
	return &c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
