$env:PATH = "$HOME/.zylos/bin" + [IO.Path]::PathSeparator + $env:PATH
$env:ZYLOS_HOME = "$HOME/.zylos"
