package bdd

import (
	"flag"
	"os"
	"testing"

	"github.com/cucumber/godog"
)

var opt = godog.Options{Output: os.Stdout, Format: "progress"}

func init() {
	godog.BindFlags("godog.", flag.CommandLine, &opt)
}

func TestMain(m *testing.M) {
	flag.Parse()
	opt.Paths = flag.Args()
	status := godog.TestSuite{
		Name:                "godogshop",
		ScenarioInitializer: InitializeScenario,
		Options:             &opt,
	}.Run()
	if st := m.Run(); st > status {
		status = st
	}
	os.Exit(status)
}
