module kcontrol.bench/webhooks/floor

go 1.26
