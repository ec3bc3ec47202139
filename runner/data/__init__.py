"""Data model, readers, JMESPath mapping and knowledge-base loading."""
