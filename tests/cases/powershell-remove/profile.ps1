Set-Alias ll Get-ChildItem
# BEGIN ZYLOS MANAGED path hash=000000000000
$env:PATH = "$HOME/.zylos/bin;" + $env:PATH
# END ZYLOS MANAGED path
$c = @'
# BEGIN ZYLOS MANAGED path
'@
