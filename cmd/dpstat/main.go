// Command dpstat answers aggregate questions about sensitive data with
// differential privacy. See the README for the commands.
package main

import "github.com/dpstat/dpstat/internal/cli"

func main() { cli.Main() }
