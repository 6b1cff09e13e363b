module github.com/openmrc/mrc

go 1.26
