package main
import ("os";"strconv";"github.com/cgtviz/cgtviz/traces/gen")
func main(){ s,_:=strconv.Atoi(os.Args[1]); n,_:=strconv.Atoi(os.Args[2]); gen.Trace(int64(s), gen.Options{Records: n}).Write(os.Stdout) }
