package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/internal/output"
	"github.com/stormctl/stormctl/playbooks"
)

// prompter runs a playbook at a terminal: each step is shown and run on
// Enter, skipped with s, or the run paused with q. Actions show their plan
// first, ask for the responder's reason, and are confirmed by typing the
// target (the actions confirmation guard, on the same input).
type prompter struct {
	f   *Factory
	r   *playbooks.Run
	in  *bufio.Reader
	out io.Writer
}

func newPrompter(f *Factory, r *playbooks.Run, svc *actions.Service) *prompter {
	p := &prompter{f: f, r: r, in: bufio.NewReader(f.IO.In), out: f.IO.ErrOut}
	// One reader for every prompt, so no prompt reads ahead into another's answer.
	svc.Confirm = p
	return p
}

func (p *prompter) run(ctx context.Context, only string) error {
	if err := p.r.Start(ctx); err != nil {
		return err
	}
	var err error
	if s := p.r.Playbook().Step(only); s != nil {
		_, err = p.step(ctx, s)
	} else if only != "" {
		_, err = p.r.RunStep(ctx, only, playbooks.Input{}) // says which steps there are
	} else {
		for s := p.r.Next(); s != nil && err == nil; s = p.r.Next() {
			var quit bool
			if quit, err = p.step(ctx, s); quit {
				break
			}
		}
	}
	if ferr := p.r.Finish(ctx, err); err == nil {
		err = ferr
	}
	return err
}

// step presents one step and runs it; quit is true when the responder
// paused the run.
func (p *prompter) step(ctx context.Context, s *playbooks.Step) (quit bool, err error) {
	title := s.ID
	if s.Title != "" {
		title += ": " + s.Title
	}
	fmt.Fprintf(p.out, "\n[%s] %s\n", s.Type, title)
	for _, line := range stepDetails(s, p.r.Render) {
		fmt.Fprintf(p.out, "    %s\n", line)
	}
	switch ans, err := p.ask(ctx, "Enter to run, s to skip, q to pause the run: "); {
	case err != nil:
		return true, err
	case ans == "q":
		return true, nil
	case ans == "s":
		_, err := p.r.Skip(ctx, s.ID, "skipped by the responder")
		return false, err
	}
	in := playbooks.Input{}
	switch s.Type {
	case playbooks.Action:
		if s.Op != playbooks.OpRelease {
			if err := p.plan(ctx, s); err != nil {
				return false, err
			}
		}
		if in.Reason, err = p.ask(ctx, "Your reason, added to the playbook's (Enter for none): "); err != nil {
			return true, err
		}
	case playbooks.Ask:
		for {
			if in.Answer, err = p.ask(ctx, p.r.Render(s.Question)+choices(s)+" "); err != nil {
				return true, err
			}
			if in.Answer == "" || len(s.Choices) == 0 || slices.Contains(s.Choices, in.Answer) {
				break
			}
			fmt.Fprintf(p.out, "answer one of %s\n", strings.Join(s.Choices, ", "))
		}
	}
	_, err = p.r.RunStep(ctx, s.ID, in)
	return false, err
}

// plan shows what the action would do: the guards, the lever before and
// after, the evidence. A refusal is shown, not returned: applying will
// meet the same guard and stop the run with its code.
func (p *prompter) plan(ctx context.Context, s *playbooks.Step) error {
	res, err := p.r.Plan(ctx, s.ID, playbooks.Input{})
	if res == nil {
		return err
	}
	t := output.NewTable(p.out, true, "guard", "status", "detail")
	for _, g := range res.Guards {
		t.Row(g.Name, g.Status, g.Detail)
	}
	if terr := t.Flush(); terr != nil {
		return terr
	}
	fmt.Fprintf(p.out, "lever: %s -> %s\n", leverText(res.Before), leverText(res.After))
	if err != nil {
		fmt.Fprintf(p.out, "plan: %v\n", err)
	}
	return nil
}

// Confirm implements actions.Confirmer on the prompter's input.
func (p *prompter) Confirm(ctx context.Context, prompt, want string) (bool, error) {
	ans, err := p.ask(ctx, prompt)
	return ans == want, err
}

// ask reads one line; an interrupt (ctx) ends the wait for it, so the run
// can record that it stopped.
func (p *prompter) ask(ctx context.Context, prompt string) (string, error) {
	fmt.Fprint(p.out, prompt)
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		line, err := p.in.ReadString('\n')
		got <- answer{line, err}
	}()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case a := <-got:
		if a.err != nil && a.line == "" {
			if errors.Is(a.err, io.EOF) {
				return "", errors.New("input ended before the playbook did")
			}
			return "", a.err
		}
		return strings.TrimSpace(a.line), nil
	}
}

func choices(s *playbooks.Step) string {
	if len(s.Choices) == 0 {
		return ""
	}
	c := " [" + strings.Join(s.Choices, "/") + "]"
	if s.Default != "" {
		c += " (default " + s.Default + ")"
	}
	return c
}
