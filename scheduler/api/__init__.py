"""Read-only, slotted views of API objects and the matching rules plugins share."""
