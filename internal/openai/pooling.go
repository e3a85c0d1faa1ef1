package openai

import "errors"

// The answers of the APIs that read their inputs and generate nothing
// (embeddings, rerank) can be large: k vectors of hundreds of floats. The
// client does not decode them: it walks them with the validating scanner,
// counting vectors, their lengths and results, and reads the usage.

// pooled is what an embeddings or rerank answer says.
type pooled struct {
	items      int  // embeddings in "data", or results in "results"
	dim        int  // the first embedding's length (floats, or base64 characters)
	mixed      bool // the embeddings' lengths differ
	usage      bool // a "usage" object
	prompt     int  // usage.prompt_tokens, else usage.total_tokens
	errorValue bool // a non-null "error" member, or vLLM's "object":"error"
}

var errNotPooled = errors.New("openai: not an embeddings or rerank answer")

// scanPooled reads an embeddings ({"data":[{"embedding":[…]},…]}) or
// rerank ({"results":[{"index":…,"relevance_score":…},…]}) answer:
// items counts the members of list ("data" or "results"). It accepts
// exactly the JSON objects encoding/json accepts and allocates nothing.
func scanPooled(body []byte, list keyID) (pooled, error) {
	var p pooled
	s := scanner{b: body}
	s.ws()
	if s.peek() != '{' {
		return p, errNotPooled
	}
	seen := false
	more, err := s.objectStart(1)
	for err == nil && more {
		var k keyID
		if k, err = s.key(); err != nil {
			break
		}
		switch {
		case k == list:
			seen = s.peek() == '['
			err = s.pooledList(2, &p, list == kData)
		case k == kUsage:
			err = s.pooledUsage(1, &p)
		case k == kError:
			p.errorValue, _, err = s.errorValue(1)
		case k == kObject:
			var isErr bool
			isErr, err = s.stringIs(1, "error")
			p.errorValue = p.errorValue || isErr
		default:
			err = s.value(1)
		}
		if err == nil {
			more, err = s.objectNext()
		}
	}
	if err = s.end(err); err != nil {
		return pooled{}, err
	}
	if !seen && !p.errorValue {
		return p, errNotPooled
	}
	return p, nil
}

// pooledUsage consumes a "usage" object: prompt_tokens, else
// total_tokens (rerank servers may give only the total; nothing is
// generated, so the two agree where both are given).
func (s *scanner) pooledUsage(depth int, p *pooled) error {
	if s.peek() != '{' {
		return s.value(depth)
	}
	p.usage = true
	total := 0
	more, err := s.objectStart(depth + 1)
	for err == nil && more {
		var k keyID
		if k, err = s.key(); err != nil {
			break
		}
		switch k {
		case kPromptTokens:
			p.prompt, err = s.count(depth + 1)
		case kTotalTokens:
			total, err = s.count(depth + 1)
		default:
			err = s.value(depth + 1)
		}
		if err == nil {
			more, err = s.objectNext()
		}
	}
	if p.prompt == 0 {
		p.prompt = total
	}
	return err
}

// pooledList consumes the list of an answer: each element an object; for
// embeddings, the length of each "embedding" (an array's elements, or a
// base64 string's characters).
func (s *scanner) pooledList(depth int, p *pooled, vectors bool) error {
	if s.peek() != '[' {
		return s.value(depth)
	}
	more, err := s.arrayStart(depth)
	for err == nil && more {
		p.items++
		if vectors && s.peek() == '{' {
			err = s.embeddingItem(depth+1, p)
		} else {
			err = s.value(depth)
		}
		if err == nil {
			more, err = s.arrayNext()
		}
	}
	return err
}

// embeddingItem consumes one element of "data" and notes its vector's length.
func (s *scanner) embeddingItem(depth int, p *pooled) error {
	more, err := s.objectStart(depth)
	for err == nil && more {
		var k keyID
		if k, err = s.key(); err != nil {
			break
		}
		if k != kEmbedding {
			err = s.value(depth)
		} else {
			var n int
			n, err = s.vectorLen(depth)
			switch {
			case p.items == 1:
				p.dim = n
			case n != p.dim:
				p.mixed = true
			}
		}
		if err == nil {
			more, err = s.objectNext()
		}
	}
	return err
}

// vectorLen consumes an embedding: an array's element count, or a base64
// string's length.
func (s *scanner) vectorLen(depth int) (int, error) {
	switch s.peek() {
	case '"':
		start, end, _, err := s.str()
		return end - start, err
	case '[':
		n := 0
		more, err := s.arrayStart(depth + 1)
		for err == nil && more {
			n++
			if err = s.value(depth + 1); err == nil {
				more, err = s.arrayNext()
			}
		}
		return n, err
	}
	return 0, s.value(depth)
}
