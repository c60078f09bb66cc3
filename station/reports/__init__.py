"""What people read: console tables, markdown reports and charts.

tables.py   the console tables every command prints
runs.py     markdown and charts of stored runs (`invoke report`), two runs side by side (`invoke compare`)
ladder.py   a ladder's markdown report and chart
charts.py   matplotlib figures, one style
templates.py markdown from the Jinja templates beside it (*.md.j2)
"""
