"""Small transforms for dataset shapes that JMESPath alone cannot express."""
