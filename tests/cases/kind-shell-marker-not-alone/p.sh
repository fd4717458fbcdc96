echo x # BEGIN Z MANAGED a
