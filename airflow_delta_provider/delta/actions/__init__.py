"""Typed Delta log actions, their JSON form, and deletion vector descriptors."""
