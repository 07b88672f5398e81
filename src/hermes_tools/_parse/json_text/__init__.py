"""json_text"""
