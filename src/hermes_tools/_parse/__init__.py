"""_parse"""
