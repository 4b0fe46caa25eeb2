package common

import (
	"strings"

	"github.com/stormctl/stormctl/tui/styles"
)

// SelectMark marks the selected row where reverse video cannot: under
// NO_COLOR (or any plain-text profile) styles render nothing, and the
// selection would be invisible.
const SelectMark = "›"

// Select renders the selected row of a focused section, fitted to w cells
// (w <= 0: as long as it is, plus the mark). Under a plain-text profile
// the row also starts with SelectMark: in place of a leading space, else
// in front of the text, which then gives up its trailing space or last cell
// to keep w.
func Select(st *styles.Styles, s string, w int) string {
	if w > 0 {
		s = Fit(s, w)
	}
	if st.NoColor {
		switch {
		case strings.HasPrefix(s, " "):
			s = SelectMark + s[1:]
		case strings.HasSuffix(s, " "):
			s = SelectMark + s[:len(s)-1]
		case w > 0:
			s = SelectMark + Fit(s, w-1)
		default:
			s = SelectMark + s
		}
	}
	return st.Selected.Render(s)
}
