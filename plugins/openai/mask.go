package openai

// tokens estimates a message's tokens: about four bytes a token for
// English and code, plus the message's overhead. A budget does not need a
// tokenizer to be kept, only to be kept on the safe side.
func tokens(m message) int64 {
	n := len(m.Content) + len(m.Role) + 8
	for _, c := range m.ToolCalls {
		n += len(c.Function.Name) + len(c.Function.Arguments) + len(c.ID) + 12
	}
	return int64(n+3) / 4
}

func total(msgs []message) int64 {
	var n int64
	for _, m := range msgs {
		n += tokens(m)
	}
	return n
}

// keepRecent is how many of the latest observations are never masked.
const keepRecent = 3

// mask fits msgs into budget tokens by replacing the bodies of the oldest
// observations with their masked form (first and last lines, exit code,
// output id), oldest first, never the latest keepRecent ones, the system
// prompt or the task. It returns the seqs of the observations it masked
// and the estimates before and after. A budget of 0 or less masks nothing.
func mask(msgs []message, budget int64) (seqs []uint64, before, after int64) {
	before = total(msgs)
	after = before
	if budget <= 0 || before <= budget {
		return nil, before, after
	}
	var obs []int
	for i, m := range msgs {
		if m.seq != 0 && m.maskedForm != "" && m.maskedForm != m.Content {
			obs = append(obs, i)
		}
	}
	// The latest observations stay whole, however long.
	var recent int
	for i := len(msgs) - 1; i >= 0 && recent < keepRecent; i-- {
		if msgs[i].seq != 0 {
			recent++
			if n := len(obs); n > 0 && obs[n-1] == i {
				obs = obs[:n-1]
			}
		}
	}
	for _, i := range obs {
		if after <= budget {
			break
		}
		was := tokens(msgs[i])
		msgs[i].Content = msgs[i].maskedForm
		after += tokens(msgs[i]) - was
		seqs = append(seqs, msgs[i].seq)
	}
	return seqs, before, after
}
