"""The value patterns: where a sentence states a number, an amount, a duration, a frequency, a
date, a percentage, a role or a yes/no word.

Read by phase C (``synthesize.value_match`` and the question types) and by ``asked.value_spans``
(the asked kind of value near the question's focus); they live here, below both, so neither of
the two modules imports the other's definitions back.

>>> bool(DURATION.search("Logs are kept for ninety days.")), bool(CURRENCY.search("It costs $5."))
(True, True)
>>> bool(NUMBER.search("Escalate SEV-1 tickets."))
False
"""
from __future__ import annotations

import re

__all__ = ["NUM_WORDS", "NUMBER", "TIME_UNIT", "DURATION", "FREQUENCY", "MONTHS", "DATE", "CALENDAR_DATE",
           "PERCENT", "CURRENCY", "PRICE_WORD", "ROLE", "PROPER", "POLARITY"]

_I = re.IGNORECASE

NUM_WORDS = (r"(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|"
             r"fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|"
             r"sixty|seventy|eighty|ninety|hundred|thousand|million|billion|trillion|dozen|"
             r"single|double|triple|twice|thrice|once|half|several)")
#: A number; a digit inside a code ("SEV-1", "Q9", "CM-2") names something, it is no value.
NUMBER = re.compile(r"(?<![A-Za-z\d])(?<![A-Za-z]-)\d|\b" + NUM_WORDS + r"\b|\bunlimited\b|"
                    r"\bno\s+(?:limit|maximum|cap)\b", _I)
TIME_UNIT = (r"(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|nights?|weeks?|fortnights?|months?|"
             r"years?|yrs?|quarters?|decades?|centuries|century|semesters?)")
DURATION = re.compile(
    r"(?:\d[\d,.]{0,30}|\b" + NUM_WORDS + r"|\ban?|\bfew|\bmany)[\s-]{1,20}(?:(?:business|calendar|working|full|"
    r"consecutive|additional|more)[\s-]{1,20})?" + TIME_UNIT + r"\b|"
    r"\b(?:hourly|daily|nightly|weekly|fortnightly|biweekly|monthly|quarterly|annually|yearly|"
    r"biannually|semiannually|indefinitely|permanently|immediately|overnight)\b|"
    r"\b(?:every|each|per|a|one|the\s+same)\s+(?:\w+\s+)?" + TIME_UNIT + r"\b", _I)
FREQUENCY = re.compile(
    r"\b(?:every|each|per)\s+(?:other\s+|(?:\d[\d,.]*|" + NUM_WORDS + r"|few|couple\s+of)\s+)?"
    + TIME_UNIT + r"\b|"
    r"\b(?:every|each)\s+time\b|\b(?:at|with|after|before|during)\s+(?:every|each)\s+\w+|"
    r"\b(?:once|twice|thrice)\b|\b(?:\d+|" + NUM_WORDS + r")\s+times\b|"
    r"\b(?:hourly|daily|nightly|weekly|fortnightly|biweekly|monthly|quarterly|annually|yearly|"
    r"biannually|semiannually)\b|"
    r"\b(?:\d[\d,.]*|" + NUM_WORDS + r")[\s-]+" + TIME_UNIT + r"\s+intervals?\b|\bintervals?\s+of\s+\w+", _I)
MONTHS = (r"(?:january|february|march|april|june|july|august|september|october|november|december|"
          r"jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)")
DATE = re.compile(
    r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\b\d{1,2}\.\d{1,2}\.\d{4}\b|"
    r"\b" + MONTHS + r"\b\.?|\bmay\s+\d|\d\s+may\b|"
    r"\b(?:1\d{3}|20\d{2})s?\b|\b\d{1,2}(?:st|nd|rd|th)\s+century\b|"
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekdays?|weekends?|"
    r"today|tomorrow|yesterday|noon|midnight|spring|summer|autumn|fall|winter)\b|"
    r"\b\d{1,2}:\d{2}\b|\b\d{1,2}\s*(?:a\.m\.|p\.m\.|am\b|pm\b)|\bq[1-4]\s*\d{2,4}\b|"
    r"\b(?:before|after|upon|prior\s+to|until|till|within|during|since|ago|by\s+the\s+end|"
    r"at\s+the\s+(?:end|start|beginning|time)|on\s+the\s+(?:first|last)|end\s+of)\b", _I)
#: A full calendar date: 2027-06-30, 30/06/2027, 30 June 2027, June 30, 2027.
CALENDAR_DATE = re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b|"
                           r"\b\d{1,2}(?:st|nd|rd|th)?\s+" + MONTHS + r"\.?,?\s+\d{4}\b|"
                           r"\b" + MONTHS + r"\.?\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}\b", _I)
PERCENT = re.compile(r"\d\s*%|\bper\s*cent\b|\bpercent(?:age)?s?\b|\bbasis\s+points?\b|"
                     r"\b(?:half|one[\s-]third|two[\s-]thirds|a\s+third|a\s+quarter|three[\s-]quarters)\b", _I)
CURRENCY = re.compile(r"[$\u20ac\u00a3\u00a5\u20b9]\s*\d|\d\s*(?:usd|eur|gbp|jpy|chf|cad|aud|dollars?|euros?|"
                      r"pounds?|cents?|yen|pence)\b|\b(?:usd|eur|gbp|jpy|chf|cad|aud)\s*\d|"
                      r"\bfree(?:\s+of\s+charge)?\b|\bno\s+(?:additional\s+|extra\s+)?(?:charge|cost|fee)s?\b|"
                      r"\bat\s+no\s+(?:additional\s+|extra\s+)?cost\b", _I)
PRICE_WORD = re.compile(r"\b(?:costs?|price[sd]?|fees?|charged?|charges|pay|paid|billed|priced)\b", _I)
ROLE = re.compile(r"\b(?:team|teams|department|officer|manager|managers|owner|owners|administrator|"
                  r"administrators|admin|admins|committee|board|lead|staff|employee|employees|director|"
                  r"head|person|people|group|vendor|vendors|contractor|contractors|controller|processor|"
                  r"engineer|engineers|council|agency|authority|president|king|queen|founder)\b", _I)
PROPER = re.compile(r"(?<=[a-z,;:)]\s)[A-Z][a-z]+")
POLARITY = re.compile(r"\b(?:may|can|cannot|can't|must|mustn't|shall|should|not|no|never|only|yes|allowed|"
                      r"permitted|prohibited|forbidden|required|requires|eligible|entitled|except|unless|"
                      r"non-\w+|optional|mandatory)\b", _I)
