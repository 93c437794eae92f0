"""Measuring a model with torch on the device at hand (`part profile`, issue 72): its
layers' forward and backward times, parameter, stash and output bytes, written as the
partdsl-layers document `part convert --from layers` reads. torch (and transformers, for
a config) are imported only here, and only when a profile is asked for."""
