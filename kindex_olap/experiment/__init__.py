"""Replicated, interleaved A/B experiments on the user's machine, imported into the lake
(`kindex bench`): the plan, the stdlib runner (`standalone`, also emitted as a script), the
import with labels, the verdict, and Liger's versions as variants."""
