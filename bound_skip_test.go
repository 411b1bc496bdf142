package actions

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/actionreg/actions/bound"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBoundOversizedItemSkipped: {"items":[one 300 KB string]} under the
// default 32 KiB bound is no longer refused: the item is skipped, and
// the answer says so (skipped 1, kept 0).
func TestBoundOversizedItemSkipped(t *testing.T) {
	big := strings.Repeat("z", 300_000)
	res, err := boundRegistry(t, 0, true, map[string]any{"items": []any{big}}, nil).Run(context.Background(), Call{Action: "t/r"})
	require.NoError(t, err)
	b, ok := res.Value.(*bound.Bounded)
	require.True(t, ok)
	assert.Equal(t, 1, b.Bound.Skipped)
	assert.Equal(t, 0, b.Bound.Kept)
	assert.Equal(t, 0, b.Bound.Left)
	assert.Equal(t, "/items", b.Bound.Path)
	assert.NotContains(t, res.Text, "zzzz")
	assert.LessOrEqual(t, len(res.Text), 32<<10)
}

// TestBoundOversizedItemInTheMiddle: a list of 30 items whose item 12 is
// a 300 KB string, paged with a cursor: following nextCall gives every
// other item exactly once, in order, and the answers say one item was
// skipped, at position 12.
func TestBoundOversizedItemInTheMiddle(t *testing.T) {
	all := make([]string, 30)
	for i := range all {
		all[i] = fmt.Sprintf("item-%02d", i)
	}
	all[12] = strings.Repeat("z", 300_000)
	reg := NewRegistry(nil)
	require.NoError(t, reg.Register(New(Definition{ID: "t/list",
		Parameters: `{"type":"object","properties":{"cursor":` + CursorSchema + `}}`},
		func(_ context.Context, p map[string]any, _ *Trace) (any, error) {
			c, _ := p["cursor"].(string)
			return Paginate(all, c, 0)
		})))
	params := map[string]any{}
	var seen []string
	var skipped []int
	for calls := 0; ; calls++ {
		require.Less(t, calls, 10, "the pages end")
		res, err := reg.Run(context.Background(), Call{Action: "t/list", Params: params})
		require.NoError(t, err)
		require.LessOrEqual(t, len(res.Text), 32<<10)
		at := len(seen) + len(skipped) // where this page starts
		var page struct {
			Items []string `json:"items"`
		}
		b, ok := res.Value.(*bound.Bounded)
		if !ok {
			require.NoError(t, json.Unmarshal([]byte(res.Text), &page))
			seen = append(seen, page.Items...)
			break
		}
		require.NoError(t, json.Unmarshal(must(exactText(b.Value)), &page))
		for i := range b.Bound.Skipped { // skipped items are at the page's head
			skipped = append(skipped, at+i)
		}
		seen = append(seen, page.Items...)
		if b.Bound.NextCall == nil {
			break
		}
		params = b.Bound.NextCall.Params
	}
	want := append(append([]string{}, all[:12]...), all[13:]...)
	assert.Equal(t, want, seen, "every other item once, in order")
	assert.Equal(t, []int{12}, skipped)
}

// TestBoundCutTextGivesNextCall: an action declaring a cursor returns a
// 2 MB string (mixed one- to four-byte characters) with PaginateText;
// each answer is cut within 32 KiB with a nextCall, and following them
// rebuilds the string exactly.
func TestBoundCutTextGivesNextCall(t *testing.T) {
	text := strings.Repeat("abcé€😀\n\"", 2_000_000/19)
	reg := NewRegistry(nil)
	require.NoError(t, reg.Register(New(Definition{ID: "t/text",
		Parameters: `{"type":"object","properties":{"cursor":` + CursorSchema + `}}`},
		func(_ context.Context, p map[string]any, _ *Trace) (any, error) {
			c, _ := p["cursor"].(string)
			return PaginateText(text, c)
		})))
	var got strings.Builder
	params := map[string]any{}
	for calls := 0; ; calls++ {
		require.Less(t, calls, 200, "the pages end")
		res, err := reg.Run(context.Background(), Call{Action: "t/text", Params: params})
		require.NoError(t, err)
		require.LessOrEqual(t, len(res.Text), 32<<10)
		b, ok := res.Value.(*bound.Bounded)
		if !ok {
			got.WriteString(res.Value.(string))
			break
		}
		got.WriteString(b.Value.(string))
		require.NotNil(t, b.Bound.NextCall, "a cut text says where to go on")
		params = b.Bound.NextCall.Params
	}
	assert.True(t, got.String() == text, "the pages rebuild the text")
}
