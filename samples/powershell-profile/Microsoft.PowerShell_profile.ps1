# Microsoft.PowerShell_profile.ps1
Set-PSReadLineOption -EditMode Emacs

<#
  Notes kept by hand. The line below is a comment block, not a marker:
  # BEGIN ZYLOS MANAGED path
#>
$banner = @'
# END ZYLOS MANAGED path
'@
function prompt { "PS $($executionContext.SessionState.Path.CurrentLocation)> " }
