module example.com/killgo

go 1.22
