// Command conformance runs conformance vectors (tests/vectors/README.md) through the Go module:
//
//	go run scale-units.dev/go/cmd/conformance [-component FILE] DIR...
//
// (and every folder of $SCALE_UNITS_VECTORS, `:`-separated, when it is set). It prints each
// failure, then exactly `N passed, N failed`, and exits 1 when any vector fails. A vector listed
// in DIR/known-failures/go.txt (`<id> <reason>` a line) must fail; it counts as failed if it
// passes. A DIR that is missing or holds no vector counts as one failure.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	scaleunits "scale-units.dev/go"
)

func main() {
	componentFile := flag.String("component", "", "a component file to run instead of the one this module carries")
	flag.Parse()
	dirs := flag.Args()
	if env := os.Getenv("SCALE_UNITS_VECTORS"); env != "" {
		for _, d := range strings.Split(env, ":") {
			if d != "" {
				dirs = append(dirs, d)
			}
		}
	}
	if len(dirs) == 0 {
		fmt.Fprintln(os.Stderr, "usage: conformance [-component FILE] DIR... (or set $SCALE_UNITS_VECTORS to folders of vectors, :-separated)")
		os.Exit(2)
	}
	ctx := context.Background()
	var ev *scaleunits.Evaluator
	var err error
	if *componentFile != "" {
		var b []byte
		if b, err = os.ReadFile(*componentFile); err == nil {
			ev, err = scaleunits.New(ctx, b)
		}
	} else {
		ev, err = scaleunits.NewBundled(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	}
	defer func() { _ = ev.Close(ctx) }()
	passed, failed := 0, 0
	for _, dir := range dirs {
		suite, err := scaleunits.LoadConformanceSuite(dir)
		if err != nil {
			failed++
			fmt.Printf("FAIL %s: %v\n", dir, err)
			continue
		}
		if len(suite.Vectors) == 0 {
			failed++
			fmt.Printf("FAIL %s: no vectors below it\n", dir)
		}
		known, err := knownFailures(dir)
		if err != nil {
			failed++
			fmt.Printf("FAIL %s: %v\n", dir, err)
		}
		for i := range suite.Vectors {
			v := &suite.Vectors[i]
			problems := v.Check(ctx, ev)
			reason, listed := known[v.ID]
			switch {
			case listed && len(problems) > 0:
				passed++
			case listed:
				failed++
				fmt.Printf("FAIL %s: listed in known-failures/go.txt (%s) but passes; remove it from the list\n", v.ID, reason)
			case len(problems) > 0:
				failed++
				fmt.Printf("FAIL %s (%s)\n", v.ID, v.File)
				for _, p := range problems {
					fmt.Printf("  %s\n", p)
				}
			default:
				passed++
			}
		}
	}
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}

// knownFailures reads `<id> <reason>` lines of DIR/known-failures/go.txt, when it exists.
func knownFailures(dir string) (map[string]string, error) {
	listed := map[string]string{}
	f, err := os.Open(filepath.Join(dir, "known-failures", "go.txt"))
	if os.IsNotExist(err) {
		return listed, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		text := strings.TrimSpace(scanner.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		id, reason, _ := strings.Cut(text, " ")
		listed[id] = strings.TrimSpace(reason)
	}
	return listed, scanner.Err()
}
