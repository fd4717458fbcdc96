# BEGIN ZYLOS MANAGED bin-path
export PATH="$HOME/zylos/bin:$PATH"
# END ZYLOS MANAGED bin-path
