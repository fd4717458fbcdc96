export A=1
# BEGIN Z MANAGED a
export B=2
