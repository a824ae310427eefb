COPY settings (key, value) FROM STDIN;
