# Regions zylos 1.0 manages in a shell profile. Text outside regions is ignored by sync.

# BEGIN ZYLOS MANAGED path
export PATH="$HOME/.zylos/bin:$PATH"
# END ZYLOS MANAGED path

# BEGIN ZYLOS MANAGED hooks
if command -v zylos >/dev/null 2>&1; then
    eval "$(zylos init bash)"
fi
# END ZYLOS MANAGED hooks
