module pivoter.local/hack/image/pause

go 1.26
