module example.com/seeds

go 1.24
