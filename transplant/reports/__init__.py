"""What comes out: every view of the records a conversion made.

* repository.py   repository mode's three files: change_list.csv, unsupported_op.xlsx, the log
* sheets.py       the workbook's sheets of custom operators and CUDA-only libraries
* columns.py      a table as one list of columns (name, width, value), for the CSV and the workbook
* xlsx.py         the workbook file format (openpyxl, write-only mode)
* writer_child.py the workbook written by a child that imported openpyxl while the run converted
* diagnostics.py  the file modes' and the language server's view: text, JSON, SARIF 2.1.0
* linemap.py      where a finding's line is in the converted file

Kept light on purpose: the file modes import diagnostics.py alone, without the writers.
"""
