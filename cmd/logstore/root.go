package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/logstore/logstore/internal/shutdown"
)

// Exit statuses of the logstore command.
const (
	exitOK       = 0
	exitError    = 1 // bad flags, unreadable or unsupported input, I/O
	exitProblems = 2 // check: problems found in the store (corruption, torn tail, bad index or snapshot)
	exitRefused  = 3 // append: the store refused a batch (OUT_OF_ORDER, FENCED, INVALID)
)

// run builds the command tree, runs it with args and returns the exit
// status. It is the one place where an error becomes a message on stderr
// and an exit status.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	// Name what failed: the command path ("logstore dump"), then the
	// error, which names the file and byte position where there is one.
	where := root.Name()
	if cmd != nil {
		where = cmd.CommandPath()
	}
	fmt.Fprintf(stderr, "%s: %v\n", where, err)
	return exitCode(err)
}

// exitCode maps an error to an exit status: 128+n for a run that
// signal n stopped (130 for SIGINT, 143 for SIGTERM), 3 for batches the
// store refused, 2 for problems check found, 1 for every other failure.
func exitCode(err error) int {
	var stopped *shutdown.Interrupted
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &stopped):
		return stopped.ExitStatus()
	case errors.Is(err, errRefused):
		return exitRefused
	case errors.Is(err, errProblemsFound):
		return exitProblems
	}
	return exitError
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "logstore",
		Short: "A durable log store that keeps Kafka v2 record batches in Kafka's own segment format",
		Long: `logstore keeps each partition as Kafka does on disk: segment files of
Kafka v2 record batches, byte for byte. This command works on those files.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(newDumpCommand())
	root.AddCommand(newAppendCommand())
	root.AddCommand(newProducersCommand())
	root.AddCommand(newAbortCommand())
	root.AddCommand(newGroupsCommand())
	root.AddCommand(newTopicsCommand())
	root.AddCommand(newUsersCommand())
	root.AddCommand(newACLsCommand())
	root.AddCommand(newReadCommand())
	root.AddCommand(newCheckCommand())
	root.AddCommand(newExportCommand())
	root.AddCommand(newPerfCommand())
	root.AddCommand(newServeCommand())
	return root
}
