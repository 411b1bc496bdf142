package actions
import ("testing";"fmt")
func TestScratch(t *testing.T){
 for _, s := range []string{
  `{"type":"object","properties":{"a":{"type":"object","patternProperties":{"(?=x)":{}}}}}`,
  `{"type":"object","properties":{"a":{"minLength":-1},"b":{"maxLength":-1},"c":{"minItems":-1}}}`,
  `{"properties":{}}`,
  `{"type":"object",}`,
  `{"type":"object","properties":{"mode":{"$ref":"#/$defs/M"},"level":{"$ref":"#/$defs/M","default":"fast"}},"$defs":{"M":{"type":"string","enum":["fast","safe"],"default":"safe"}}}`,
 }{
  for i:=0;i<4;i++{ _,err:=CompileParameters(s); var r *Refusal; if asRef(err,&r){fmt.Printf("%q %q | ",r.Issues[0].Path,r.Issues[0].Keyword)}; fmt.Println(err)}
 }
}
func asRef(err error, r **Refusal) bool { x,ok:=err.(*Refusal); *r=x; return ok }
