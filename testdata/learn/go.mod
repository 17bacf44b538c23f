module example.com/learn

go 1.24
