# zylos 1.x shell profile template: only the regions matter.
# BEGIN ZYLOS MANAGED path
export PATH="$HOME/.zylos/bin:$PATH"
# END ZYLOS MANAGED path
# BEGIN ZYLOS MANAGED hooks
eval "$(zylos hook bash)"
# END ZYLOS MANAGED hooks
# BEGIN ZYLOS MANAGED prompt
export ZYLOS_PROMPT=short
export ZYLOS_COLOR=auto
export ZYLOS_PAGER=less
# END ZYLOS MANAGED prompt
