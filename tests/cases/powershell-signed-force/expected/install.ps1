Write-Output 'signed'

# BEGIN ZYLOS MANAGED path hash=a1ecdb68c7ff
$env:Z = 1
# END ZYLOS MANAGED path
# SIG # Begin signature block
# MIIFuQYJKoZIhvcNAQcCoIIFqjCCBaYCAQExCzAJBgUrDgMCGgUAMGkGCisGAQQB
# SIG # End signature block
