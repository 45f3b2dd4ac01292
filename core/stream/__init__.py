"""stream"""
