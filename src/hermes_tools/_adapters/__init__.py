"""_adapters"""
