module example.com/slowlines

go 1.24
