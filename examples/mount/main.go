// Command mount serves the orgadmin /v1 API from an existing program's mux,
// beside that program's own routes.
//
//	go run ./examples/mount
//	curl localhost:8081/hello
//	curl -H "Authorization: Bearer $TOKEN" localhost:8081/v1/users
//	curl localhost:8081/admin/openapi.json
package main

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

func main() {
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	token, err := svc.Bootstrap(context.Background(), orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintln(os.Stderr, "admin token:", token)

	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	mux := http.NewServeMux()
	// The program's own routes...
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "hello from the host program")
	})
	// ...and the orgadmin API under /v1/, with its OpenAPI document, its
	// health check and the page-feedback endpoint where this program wants
	// them. (Under a prefix: httpserver.Config.Prefix, or http.StripPrefix;
	// see the README's "Mounting".)
	api := httpserver.New(svc, httpserver.Config{Logger: logger})
	mux.Handle("/v1/", api)
	mux.Handle("/ext/", api) // the audit trail
	mux.Handle("GET /admin/openapi.json", httpserver.OpenAPIHandler("/"))
	mux.Handle("GET /admin/healthz", httpserver.Health(svc))
	mux.Handle("/admin/feedback", httpserver.NewFeedback(svc, httpserver.FeedbackConfig{Logger: logger}))
	// The mux would redirect an unclean path (/v1/users/robot/tokens/..)
	// to another route, method kept: the Handler answers it a 404 instead.
	root := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !httpserver.CleanPath(r.URL.EscapedPath()) {
			api.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})

	srv := &http.Server{
		Addr:              "127.0.0.1:8081",
		Handler:           root,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		// Longer than ReadTimeout: a request whose body stopped coming
		// still gets its 400 before the connection is closed.
		WriteTimeout: 35 * time.Second,
		IdleTimeout:  2 * time.Minute,
	}
	log.Fatal(srv.ListenAndServe())
}
