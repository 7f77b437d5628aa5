package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/logstore/logstore/users"
)

func newUsersCommand() *cobra.Command {
	dir := defaultStoreDir()
	cmd := &cobra.Command{
		Use:   "users",
		Short: "Add, list and delete the users that serve's SASL listeners authenticate",
		Long: `users edits DIR/users.json, the users that logstore serve's SASL_PLAINTEXT and
SASL_SSL listeners authenticate (as kafka-configs.sh --alter --add-config
'SCRAM-SHA-256=[password=...]' --entity-type users does for Kafka). Each user
has a SCRAM credential per mechanism: a random salt, an iteration count and
the keys SCRAM derives from the password, never the password itself; PLAIN
logins are checked against the same credential. The file is replaced
durably at each change, and a running serve reads it again when it changes:
a user added or deleted counts for the next authentication.`,
		Example: `  echo 'pencil' | logstore users add alice --dir data
  logstore users add bob --mechanism SCRAM-SHA-512 --iterations 16384 < password.txt
  logstore users list --dir data
  logstore users delete alice --dir data`,
		Args: cobra.NoArgs,
	}
	addDirFlag(cmd.PersistentFlags(), &dir)

	var mechs []string
	iterations := users.DefaultIterations
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Add a user, or give it a new password, read from the first line of stdin",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			password, err := readPassword(cmd.InOrStdin())
			if err != nil {
				return err
			}
			var creds []users.Credential
			for _, s := range mechs {
				m, err := users.ParseMechanism(s)
				if err != nil {
					return fmt.Errorf("--mechanism: %w", err)
				}
				c, err := users.NewCredential(m, password, iterations)
				if err != nil {
					return fmt.Errorf("user %q: %w", args[0], err)
				}
				creds = append(creds, c)
			}
			f, err := openUsers(dir)
			if err != nil {
				return err
			}
			return f.Update(cmd.Context(), func(us []users.User) ([]users.User, error) {
				for _, c := range creds {
					us = users.Set(us, args[0], c)
				}
				return us, nil
			})
		},
	}
	add.Flags().StringSliceVar(&mechs, "mechanism", []string{string(users.ScramSHA256), string(users.ScramSHA512)}, "the SCRAM mechanisms to give the user a credential for")
	add.Flags().IntVar(&iterations, "iterations", iterations, fmt.Sprintf("PBKDF2 iterations of the credential (%d to %d)", users.MinIterations, users.MaxIterations))

	var deleteMech string
	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a user, or only its credential for --mechanism",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var m users.Mechanism
			if deleteMech != "" {
				var err error
				if m, err = users.ParseMechanism(deleteMech); err != nil {
					return fmt.Errorf("--mechanism: %w", err)
				}
			}
			f, err := openUsers(dir)
			if err != nil {
				return err
			}
			return f.Update(cmd.Context(), func(us []users.User) ([]users.User, error) { return users.Remove(us, args[0], m) })
		},
	}
	del.Flags().StringVar(&deleteMech, "mechanism", "", "delete only this mechanism's credential (the user goes with its last)")

	list := &cobra.Command{
		Use:   "list",
		Short: "List the users and their mechanisms",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := openUsers(dir)
			if err != nil {
				return err
			}
			us, err := f.List()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "USER\tMECHANISM\tITERATIONS")
			for _, u := range us {
				for _, c := range u.Credentials {
					fmt.Fprintf(tw, "%s\t%s\t%d\n", u.Name, c.Mechanism, c.Iterations)
				}
			}
			return tw.Flush()
		},
	}
	cmd.AddCommand(add, del, list)
	return cmd
}

// openUsers opens dir's users file; dir must exist (a store, or where
// serve will make one).
func openUsers(dir string) (*users.File, error) {
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	return users.Open(dir)
}

// checkDir says why --dir dir is not a directory, if it is not.
func checkDir(dir string) error {
	if fi, err := os.Stat(dir); err != nil {
		return fmt.Errorf("--dir: %w", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("--dir %s: not a directory", dir)
	}
	return nil
}

// maxPasswordBytes bounds the line readPassword reads.
const maxPasswordBytes = 4096

// readPassword reads the password from the first line of r: a password
// on the command line would be in the shell's history and in ps.
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReaderSize(io.LimitReader(r, maxPasswordBytes+1), maxPasswordBytes+1).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading the password from stdin: %w", err)
	}
	if len(line) > maxPasswordBytes {
		return "", fmt.Errorf("the password on stdin is longer than %d bytes", maxPasswordBytes)
	}
	password := strings.TrimRight(line, "\r\n")
	if password == "" {
		return "", errors.New("no password on stdin: give it as the first line")
	}
	return password, nil
}
