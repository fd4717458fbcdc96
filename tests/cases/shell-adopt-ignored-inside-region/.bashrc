# BEGIN OTHER MANAGED x
# zylos-managed: bin PATH
# END OTHER MANAGED x
