Set-Alias ll Get-ChildItem
<#
# BEGIN ZYLOS MANAGED path
#>
$a = 'it''s
# END ZYLOS MANAGED path'
$b = "quote `" and ""
# BEGIN ZYLOS MANAGED path
$(
# END ZYLOS MANAGED path
)"
$c = @'
# BEGIN ZYLOS MANAGED path
'@
$d = @"
# END ZYLOS MANAGED path
"@
$h = @{
    # BEGIN ZYLOS MANAGED path
    a = 1
}
Write-Output a `
# END ZYLOS MANAGED path
function Set-Greeting {
    # BEGIN ZYLOS MANAGED greet
    Write-Output hi
    # END ZYLOS MANAGED greet
}
echo done # BEGIN ZYLOS MANAGED inline
