package client

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wardenhq/warden/workflows"
)

// ParseBudget reads a budget written as comma-separated NAME=VALUE
// items: tokens, input_tokens and output_tokens (counts, with K, M or G:
// 2M), cost (a number in the price table's currency), tool_calls, time (a
// duration: 8h, 90m, 2d), warn (a fraction or a percentage: 0.8, 80%),
// and any other NAME a tool's name whose calls it bounds (Bash=200). A
// raise (--raise) is written the same way, each value optionally with a
// leading "+"; it may not set warn.
func ParseBudget(s string, raise bool) (workflows.Budget, error) {
	var b workflows.Budget
	if strings.TrimSpace(s) == "" {
		return b, errors.New("budget: empty (want e.g. tokens=2M,cost=5,tool_calls=500,time=8h)")
	}
	for _, item := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(item), "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || name == "" || val == "" {
			return b, fmt.Errorf("budget item %q: want NAME=VALUE", item)
		}
		if raise {
			val = strings.TrimPrefix(val, "+")
		} else if strings.HasPrefix(val, "+") {
			return b, fmt.Errorf("budget item %q: a budget sets amounts; a raise (--raise) adds them", item)
		}
		if err := setBudget(&b, name, val, raise); err != nil {
			return b, fmt.Errorf("budget item %q: %w", item, err)
		}
	}
	return b, nil
}

func setBudget(b *workflows.Budget, name, val string, raise bool) error {
	var err error
	switch name {
	case "tokens":
		b.Tokens, err = count(val)
	case "input_tokens":
		b.InputTokens, err = count(val)
	case "output_tokens":
		b.OutputTokens, err = count(val)
	case "cost":
		b.Cost, err = strconv.ParseFloat(val, 64)
		if err == nil && b.Cost <= 0 {
			err = errors.New("want a positive amount")
		}
	case "tool_calls":
		var n int64
		n, err = count(val)
		b.ToolCalls = int(n)
	case "time":
		b.Time, err = duration(val)
	case "warn":
		if raise {
			return errors.New("a raise sets no warning")
		}
		b.Warn, err = fraction(val)
	default:
		var n int64
		if n, err = count(val); err == nil {
			if b.PerTool == nil {
				b.PerTool = map[string]int{}
			}
			b.PerTool[name] = int(n)
		}
	}
	return err
}

// count reads a positive count: 500, 2K, 2M, 1.5G.
func count(s string) (int64, error) {
	mult := 1.0
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		mult = 1e3
	case "M":
		mult = 1e6
	case "G":
		mult = 1e9
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f*mult < 1 {
		return 0, fmt.Errorf("want a positive count such as 500 or 2M")
	}
	return int64(f * mult), nil
}

// duration reads a positive Go duration, or days ("2d").
func duration(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(d, 64)
		if err != nil || n <= 0 {
			return 0, errors.New("want a positive duration such as 8h or 2d")
		}
		return time.Duration(n * 24 * float64(time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, errors.New("want a positive duration such as 8h or 2d")
	}
	return d, nil
}

// fraction reads 0.8 or 80% as 0.8 (above 0, at most 1).
func fraction(s string) (float64, error) {
	pct, isPct := strings.CutSuffix(s, "%")
	f, err := strconv.ParseFloat(pct, 64)
	if isPct {
		f /= 100
	}
	if err != nil || f <= 0 || f > 1 {
		return 0, errors.New("want a fraction such as 0.8 or 80%")
	}
	return f, nil
}
