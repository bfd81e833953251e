"""Published test vectors the suite checks targets against, each with its source."""
