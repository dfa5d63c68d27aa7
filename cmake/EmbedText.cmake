# cmake -DIN=file -DOUT=file.inc -P EmbedText.cmake : wraps a text file in a C++ raw string literal.
file(READ "${IN}" content)
file(WRITE "${OUT}" "R\"__bf__(${content})__bf__\"\n")
