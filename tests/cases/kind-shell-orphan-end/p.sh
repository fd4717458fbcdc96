export A=1
# END Z MANAGED a
export B=2
