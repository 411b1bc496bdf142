package ijson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchTexts returns the three sizes the package is tuned for: the
// parameters of one call, a nested result of about 1 KB and an array of
// objects of about 100 KB.
func benchTexts() map[string][]byte {
	small := `{"id":"ticket-4711","title":"Printer on floor 3 is jammed","priority":2,` +
		`"assignee":null,"urgent":true,"tags":["hardware","printer"],"estimate":1.5,"note":"Ça coince 🙃"}`

	var mid strings.Builder
	mid.WriteString(`{"status":"ok","count":3,"items":[`)
	for i := range 3 {
		if i > 0 {
			mid.WriteByte(',')
		}
		fmt.Fprintf(&mid, `{"id":%d,"name":"item number %d","price":%d.25,"ratio":%g,"active":%t,`+
			`"owner":{"name":"Zoë \"Z\" Åberg","email":"zoe%d@example.org","roles":["reader","writer"]},`+
			`"history":[{"at":"2024-05-0%dT10:00:00Z","by":"system","change":"created\nline two"}]}`,
			i, i, 10+i, 1.0/float64(i+3), i%2 == 0, i, i+1)
	}
	mid.WriteString(`],"next":null}`)

	var big strings.Builder
	big.WriteByte('[')
	for i := 0; big.Len() < 100_000; i++ {
		if i > 0 {
			big.WriteByte(',')
		}
		fmt.Fprintf(&big, `{"seq":%d,"key":"k-%06d","value":%g,"ok":%t,"labels":["a","b\u00e9"],"meta":{"x":-%d,"y":"%d e"}}`,
			i, i*7919, float64(i)*0.37, i%3 == 0, i, i)
	}
	big.WriteByte(']')

	return map[string][]byte{"small": []byte(small), "1k": []byte(mid.String()), "100k": []byte(big.String())}
}

var benchSizes = []string{"small", "1k", "100k"}

func BenchmarkDecode(b *testing.B) {
	texts := benchTexts()
	for _, name := range benchSizes {
		text := texts[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(text, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStdUnmarshal is the peer: encoding/json into any, with
// UseNumber so that numbers stay exact as they do in Decode.
func BenchmarkStdUnmarshal(b *testing.B) {
	texts := benchTexts()
	for _, name := range benchSizes {
		text := texts[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				dec := json.NewDecoder(bytes.NewReader(text))
				dec.UseNumber()
				var v any
				if err := dec.Decode(&v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStdUnmarshalFloat is encoding/json.Unmarshal into any without
// UseNumber, the cheapest call it offers.
func BenchmarkStdUnmarshalFloat(b *testing.B) {
	texts := benchTexts()
	for _, name := range benchSizes {
		text := texts[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				var v any
				if err := json.Unmarshal(text, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
