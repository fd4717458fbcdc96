# BEGIN OTHER MANAGED x
# zylos-managed: bin PATH
# END OTHER MANAGED x
# BEGIN ZYLOS MANAGED bin-path hash=20f9a43af95e
export PATH="$HOME/zylos/bin:$PATH"
# END ZYLOS MANAGED bin-path
