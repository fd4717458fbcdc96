Set-Alias ll Get-ChildItem
$c = @'
# BEGIN ZYLOS MANAGED path
'@
