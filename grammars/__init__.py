"""The shipped Lark grammar of the .part language (`part.lark`, package data)."""
