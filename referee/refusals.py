"""Reading 2: refusals decided by the answer's bottom line (refusal, partial refusal, answer)."""
from __future__ import annotations

import math
import re

from .base import REFUSAL
from .text import problem_text, read_problem, split_sentences, text_form

# ---- reading 2: refusals
# A response is a refusal when what it asserts is that it cannot answer and it gives no
# substantive answer; a caveat inside an answer keeps it an answer; a response that answers
# part and declines part is a partial refusal (an answer for the seed's metrics).  How it is
# read (docs/refusals.md has the figures on labelled real LLM output):
#   1. the token: the claim is the refusal token once Markdown, quotes, a label ("Answer:")
#      and closing punctuation are taken off ("**Not in context.**");
#   2. fast path: no decline cue in the text -> an answer;
#   3. sentences: each is a decline (a cue below, or a [scorer] refusal/cutoff pattern), a
#      pleasantry or pointer elsewhere ("you can check the official website"), or content;
#      declines and pointers only -> a refusal; no decline -> an answer;
#   4. both: the bottom line decides (read_refusal): content first is an answer unless a
#      firm decline concludes it; a decline first is a refusal unless a contrast ("but",
#      "however") brings content after it; an answer with a firm decline after its content
#      is a partial refusal;
#   5. an English response that opens with a decline or a disclaimer and goes on with content
#      is decided by REFUSAL_MODEL instead (fitted on labelled LLM output; below).
# Sentences are cut by split_sentences (one splitter with reading 4), then by line.
# Texts longer than REFUSAL_WINDOW characters are read as their first and last halves of
# it: a response asserts its bottom line at its start or its end.

REFUSAL_WINDOW = 4000
KIND_ANSWER, KIND_REFUSAL, KIND_PARTIAL = "answer", "refusal", "partial_refusal"
READERS = ("builtin", "exact")

_APOS = "['\u2019]"
# Decline cues: sentences that say the response cannot answer.  English families, and the
# same families in German, French, Spanish, Portuguese, Italian and Dutch.
_DECLINE_SOURCES = {
    "en_first": (
        # en: first-person inability / lack
        r"\bi (?:cannot|can ?not|can" + _APOS + r"t|could not|couldn" + _APOS + r"t|was unable to|am unable to|"
        r"am not able to|was not able to|wasn" + _APOS + r"t able to|(?:would|will) not be able to|won" + _APOS
        + r"t be able to) (?:answer|provide|find|determine|say|tell|confirm|give|locate|access|know|see|help|"
        r"assist|comply|share|offer|identify|verify|predict|be certain|be sure|speak|comment|respond|browse|"
        r"watch|fulfil|fulfill|do that|do this|discuss|support|create|write|generate|accurately)\b",
        r"\bi" + _APOS + r"m (?:unable|not able) to\b",
        r"\bunable to (?:answer|determine|provide|find|say|tell|confirm|locate|identify|verify|give|respond|help|assist)\b",
        r"\bi (?:do not|don" + _APOS + r"t|did not|didn" + _APOS + r"t) (?:know|find|see|have (?:any |enough |sufficient |specific |the |that |this |an |)(?:relevant |specific |precise |exact |reliable |further |more )?(?:information|data|details|knowledge|context|answer|records?)\b)",
        r"\bi (?:have no|lack|had no) (?:information|knowledge|data|details|access|way|means|context)\b",
        r"\bi(?: am|" + _APOS + r"m) not (?:sure|certain|aware|able|allowed|permitted|programmed)\b",
        r"\bi (?:must|have to|will have to) (?:decline|refuse)\b",
        r"\bi (?:won" + _APOS + r"t|will not|shall not) (?:help|assist|provide|answer|do|comply|create|write|generate|share|give|engage|support)\b",
        r"\b(?:can" + _APOS + r"t|cannot|can not|unable to) (?:help|assist) (?:you )?with (?:that|this|it|your request|the request)\b",
        r"\bnot (?:something|a request|a topic) (?:i|that i) can\b",
        r"\bagainst (?:my|our|the) (?:guidelines|policies|policy|principles|programming|rules)\b",
        r"^(?:i" + _APOS + r"m|i am) (?:sorry|afraid i|afraid that i|afraid,? but)\b",
        r"^(?:sorry|apologies|regrettably|i apologi[sz]e)(?:[,.!:]|$| but\b| i\b| we\b| to\b| that\b| for\b)",
        r"^unfortunately,? (?:i|we|the (?:provided |given )?(?:passages?|context|documents?|text|sources?|information)|there is no|there are no|none of|no )",
    ),
    "en": (
        # en: the sources do not say
        r"\b(?:passages?|context|documents?|texts?|sources?|excerpts?|articles?|paragraphs?|materials?|search results|"
        r"information provided|provided information|information given|reference|snippets?|records?|data provided)"
        r"(?: provided| given| available| available to me| retrieved| supplied| shared)? "
        r"(?:do|does|did)(?: not|n" + _APOS + r"t) (?:seem to |appear to )?(?:provide|contain|mention|specify|state|include|say|give|"
        r"answer|address|offer|discuss|describe|indicate|reveal|tell|cover|list|explain|clarify|establish|have|"
        r"identify|name|confirm|support|show|report|detail|define)\b",
        r"\bnothing in the (?:provided |given |retrieved |available )?(?:context|documents?|sources?|passages?|texts?|excerpts?) (?:addresses|answers|mentions|covers|says|states|explains)\b",
        r"\bi can only (?:answer|help|respond)\b",
        r"\bthere (?:is|are|was|were)n" + _APOS + r"t (?:enough|any|sufficient|much) (?:relevant |specific )?(?:information|context|data|details|mention|evidence)\b",
        r"\bnone of the (?:provided |given |retrieved |available )?(?:passages?|documents?|sources?|texts?|excerpts?|results?|information)\b",
        r"\bnot (?:explicitly |specifically |directly |clearly |actually |expressly )?(?:stated|mentioned|specified|provided|given|"
        r"addressed|listed|included|indicated|described|covered|found|available|present|answered|discussed|defined|named|identified|disclosed|known) "
        r"(?:in|within|by|from) (?:the|any|these|this|those) (?:provided |given |available |retrieved |above |following )?"
        r"(?:passages?|context|documents?|texts?|sources?|excerpts?|articles?|paragraphs?|information|materials?|data|search results)\b",
        r"\b(?:is|are|was|were) not (?:mentioned|specified|stated)\b",
        r"\b(?:is|are|was|were) not (?:explicitly|specifically|directly|clearly|expressly) (?:stated|mentioned|specified|provided|given|addressed|indicated|described|answered|defined|known)\b",
        r"\b(?:there is|there" + _APOS + r"s|there are|there was|there were|we have|i have found|i found|i see) (?:no|not (?:enough|any|a|much)|insufficient|little) "
        r"(?:specific |clear |direct |definitive |explicit |relevant |further |additional |such |precise |exact |conclusive |concrete |definite |single |reliable |mention|information|answer|data|details|indication|record|reference|way|context)",
        r"\bno (?:specific |relevant |further |additional |clear |definitive |direct |explicit )?(?:information|details|data|mention|answer|record|indication) "
        r"(?:is |was |were |has been |could be |can be )?(?:available|provided|given|found|mentioned|stated|about|on|regarding|in the|for|to|that|of|was|is|concerning)\b",
        r"\b(?:not enough|insufficient|inadequate|lack of|limited|no) (?:relevant |specific |sufficient )?(?:information|context|details|data|evidence) (?:to|is|was|in|about|on|for|available|provided|given|regarding)\b",
        r"\bno (?:clear|direct|conclusive|definitive|explicit) evidence (?:in|from|within) the\b",
        r"\bwithout (?:more|additional|further|specific|any|the|more specific) (?:information|context|details|data|specifics)\b",
        r"\b(?:please )?(?:provide|give|share) (?:me )?(?:more|additional|further|some more) (?:information|context|details)\b",
        r"\b(?:please specify|could you (?:please )?(?:clarify|specify|provide)|can you (?:please )?(?:clarify|specify|provide more))\b",
        # en: impersonal impossibility
        r"\b(?:it is|it" + _APOS + r"s|it was|it remains|it would be|this is) (?:not possible|impossible|not clear|unclear|uncertain|unknown|difficult|hard|not feasible|not easy|challenging|tricky) "
        r"(?:for me )?to (?:determine|say|know|tell|answer|estimate|identify|provide|confirm|conclude|predict|quantify|pinpoint|find|state|ascertain|establish|verify|assess|give|infer|specify|draw)\b",
        r"\b(?:it is|it" + _APOS + r"s|it was|it remains|remains|is) (?:still |currently |therefore |thus |also )?(?:unclear|not clear|uncertain|unknown|not known|undetermined|unspecified|not specified|not certain|inconclusive) (?:whether|if|what|who|how|when|where|which|why|from|based|given|as to|at this|in the)\b",
        r"\b(?:cannot|can" + _APOS + r"t|can not|could not|couldn" + _APOS + r"t) (?:be )?(?:definitively |accurately |reliably |conclusively |precisely |clearly |confidently )?(?:be )?(?:determined|answered|confirmed|established|ascertained|known|inferred|concluded|verified|predicted|found)\b",
        r"\bthe (?:answer|information|question) (?:to (?:this|the|your) question )?(?:is|remains) (?:unknown|unclear|inconclusive|not (?:provided|given|known|available|stated|clear|mentioned|specified|in the|found|included))\b",
        r"\b(?:is|remains|are|is therefore) (?:inconclusive|undetermined)\b",
        r"\b(?:is|are|falls?|lies) (?:outside|beyond) (?:the scope|my (?:scope|knowledge|capabilities|abilities|training))\b",
        r"\bthere is no (?:one|single|simple|definitive|clear|straightforward|exact|specific|universal) answer\b",
        r"^(?:unknown|unclear|not sure|no answer|n/?a|not available|not known|no information|cannot answer|cannot say|can" + _APOS + r"t say|i don" + _APOS + r"t know|no idea|not specified|not mentioned|not provided|not stated|not found|insufficient information|no data)[.!]?$",
    ),
    "de": (
        # de
        r"\bich (?:kann|konnte|könnte|vermag)\b[^.!?\n]{0,60}\b(?:nicht|keine[nmrs]?)\b",
        r"\b(?:kann|konnte|könnte) ich\b[^.!?\n]{0,60}\b(?:nicht|keine[nmrs]?)\b",
        r"\bich (?:weiß|weiss) (?:es |das |leider )?nicht\b",
        r"\bich bin (?:mir )?(?:leider )?nicht (?:sicher|in der lage|befugt)\b",
        r"\bich habe (?:leider )?(?:keine|nicht genug|nicht genügend) (?:informationen|angaben|daten|kenntnis|zugriff|hinweise|antwort)\b",
        r"\bich (?:fand|finde|habe)\b[^.!?\n]{0,40}\bkeine (?:informationen|angaben|hinweise|daten)\b",
        r"^(?:es tut mir leid|entschuldigung|leider)\b",
        r"\b(?:dokumente?n?|unterlagen|quellen?|passagen?|texte?n?|kontext|abschnitte?n?|auszüge?n?|informationen)\b[^.!?\n]{0,40}\b(?:enthalten|nennen|erwähnen|geben|liefern|beantworten|sagen|machen|beinhalten)\b[^.!?\n]{0,40}\b(?:nicht|keine[nmrs]?)\b",
        r"\b(?:nicht|nirgends) (?:explizit |ausdrücklich |eindeutig |konkret |direkt )?(?:angegeben|erwähnt|genannt|ersichtlich|enthalten|beantwortet|bekannt|spezifiziert|festgelegt|aufgeführt|beschrieben)\b",
        r"\bkeine (?:konkreten |genauen |näheren |weiteren |relevanten |ausreichenden |spezifischen )?(?:informationen|angaben|hinweise|daten|antwort|erwähnung|aussage)\b",
        r"\b(?:lässt|liess|ließ) sich\b[^.!?\n]{0,40}\bnicht (?:beantworten|bestimmen|sagen|feststellen|ermitteln|klären)\b",
        r"\b(?:kann|können) (?:daher |deshalb |leider )?(?:nicht|keine)\b[^.!?\n]{0,40}\b(?:beantwortet|bestimmt|gesagt|festgestellt|ermittelt) werden\b",
        r"\b(?:ist|bleibt|sind) (?:leider |daher |somit )?(?:unklar|unbekannt|nicht bekannt|nicht klar|nicht möglich)\b",
        r"\bnicht möglich,? (?:zu|das|dies|diese|die|eine)\b",
        r"\bdabei kann ich\b[^.!?\n]{0,30}\bnicht helfen\b",
    ),
    "fr": (
        # fr
        r"\bje ne\b[^.!?\n]{0,50}\b(?:pas|aucune?|point)\b",
        r"\bje n" + _APOS + r"(?:ai|arrive|étais|avais|trouve)\b[^.!?\n]{0,50}\b(?:pas|aucune?)\b",
        r"^(?:désolée?|je suis désolée?|malheureusement|hélas|pardon)\b",
        r"\b(?:documents?|passages?|contexte|sources?|textes?|extraits?|informations)\b[^.!?\n]{0,40}\bne\b[^.!?\n]{0,40}\b(?:pas|aucune?|nulle part)\b",
        r"\b(?:n" + _APOS + r"(?:est|a)|ne (?:sont|sont|figure|figurent)) (?:pas|nulle part) (?:explicitement |clairement |précisément |directement )?(?:mentionnée?s?|précisée?s?|indiquée?s?|fournie?s?|spécifiée?s?|donnée?s?|connue?s?|claire?s?|été (?:mentionnée?s?|précisée?s?|indiquée?s?|trouvée?s?))\b",
        r"\baucune? (?:information|mention|donnée|réponse|indication|précision|trace)\b",
        r"\b(?:il n" + _APOS + r"est pas possible|il est impossible|il est difficile|c" + _APOS + r"est impossible|impossible) (?:de|d" + _APOS + r")\s?(?:déterminer|dire|répondre|savoir|confirmer|trouver|préciser|établir|affirmer|identifier|indiquer)\b",
        r"\b(?:on ne (?:peut|sait) pas|ne peut pas être (?:déterminée?|confirmée?|établie?))\b",
        r"\b(?:pas assez|trop peu) d" + _APOS + r"informations?\b|\binformations? insuffisantes?\b",
        r"\b(?:reste|est|demeure) (?:inconnue?|incertaine?|floue?|pas claire?)\b",
        r"\bil n" + _APOS + r"y a (?:pas|aucune?)\b[^.!?\n]{0,30}\b(?:information|mention|réponse|donnée|indication|précision)s?\b",
    ),
    "es": (
        # es
        r"\bno (?:puedo|pude|podría|sé|tengo|encontré|he encontrado|logré|estoy (?:seguro|segura|en condiciones)|dispongo|me es posible|cuento con)\b",
        r"^(?:lo siento|lo lamento|disculpa|disculpe|lamentablemente|desafortunadamente|perdón)\b",
        r"\b(?:documentos?|pasajes?|contexto|fuentes?|textos?|fragmentos?|información proporcionada)\b[^.!?\n]{0,40}\bno (?:mencionan?|contienen?|incluyen?|especifican?|indican?|proporcionan?|dicen?|responden?|dan|da|aportan?|ofrecen?|precisan?)\b",
        r"\bno (?:se (?:menciona|especifica|indica|proporciona|encuentra|dice|precisa|puede (?:determinar|saber|decir|responder|confirmar|establecer))|está (?:claro|especificado|indicado|mencionado)|es posible (?:determinar|saber|decir|responder|confirmar|establecer|precisar)|consta|hay (?:información|datos|suficiente|ninguna (?:información|mención|respuesta|indicación)|mención|respuesta|indicación|detalles))\b",
        r"\b(?:es|resulta) (?:imposible|difícil) (?:determinar|saber|decir|responder|confirmar|precisar|establecer)\b",
        r"\b(?:información|datos) insuficientes?\b|\bsin (?:más |suficiente )?información\b",
        r"\b(?:sigue siendo|es|resulta) (?:desconocido|desconocida|incierto|incierta|poco claro)\b",
        r"\bninguna (?:información|mención|respuesta|indicación)\b",
    ),
    "pt": (
        # pt
        r"\bnão (?:posso|pude|consigo|consegui|sei|tenho|encontrei|estou (?:seguro|segura|certo|certa|em condições)|disponho|me é possível)\b",
        r"^(?:desculpe|desculpa|lamento|infelizmente|sinto muito|peço desculpa)\b",
        r"\b(?:documentos?|passagens?|contexto|fontes?|textos?|trechos?|excertos?|informações fornecidas)\b[^.!?\n]{0,40}\bnão (?:mencionam?|contêm|contém|incluem?|especificam?|indicam?|fornecem?|dizem|diz|respondem?|trazem?|informam?|apresentam?)\b",
        r"\bnão (?:é (?:possível|claro) (?:determinar|saber|dizer|responder|confirmar|precisar|estabelecer|afirmar)?|se pode (?:determinar|saber|dizer|responder|confirmar)|está (?:claro|especificado|indicado|mencionado)|há (?:informação|informações|dados|menção|resposta|indicação|detalhes)|existe(?:m)? (?:informação|informações|dados|menção)|é (?:mencionado|mencionada|especificado|especificada|indicado|indicada|informado|informada))\b",
        r"\b(?:é|seria) (?:impossível|difícil) (?:determinar|saber|dizer|responder|confirmar|precisar|afirmar)\b",
        r"\binformações insuficientes\b|\bsem (?:mais )?informações\b",
        r"\b(?:permanece|é|continua) (?:desconhecido|desconhecida|incerto|incerta)\b",
        r"\bnenhuma (?:informação|menção|resposta|indicação)\b",
    ),
    "it": (
        # it
        r"\bnon (?:posso|riesco|sono in grado|sono (?:sicuro|sicura|certo|certa)|so|lo so|ho (?:trovato|informazioni|accesso|dati|elementi|modo)|dispongo)\b",
        r"^(?:mi dispiace|purtroppo|spiacente|mi scuso|scusa|scusi)\b",
        r"\b(?:documenti|passaggi|passi|contesto|fonti|testi|estratti|informazioni fornite)\b[^.!?\n]{0,40}\bnon (?:menzionano|contengono|includono|specificano|indicano|forniscono|dicono|rispondono|riportano|citano|precisano)\b",
        r"\bnon (?:è (?:possibile|chiaro|specificato|indicato|menzionato|noto|dato)|si può (?:determinare|dire|sapere|stabilire|rispondere)|(?:viene|vengono) (?:menzionat[oaie]|specificat[oaie]|indicat[oaie]|riportat[oaie])|c" + _APOS + r"è (?:alcuna|nessuna|traccia|menzione|informazione)|ci sono (?:informazioni|dati|elementi))\b",
        r"\b(?:è )?(?:impossibile|difficile) (?:determinare|dire|rispondere|sapere|stabilire|confermare|precisare)\b",
        r"\binformazioni insufficienti\b|\bsenza (?:ulteriori )?informazioni\b",
        r"\b(?:resta|rimane|è) (?:sconosciut[oa]|incert[oa]|poco chiar[oa]|ignot[oa])\b",
        r"\bnessuna (?:informazione|menzione|risposta|indicazione)\b",
    ),
    "nl": (
        # nl
        r"\bik (?:kan|kon|weet|heb|vond|vind|ben)\b[^.!?\n]{0,50}\b(?:niet|geen)\b",
        r"\b(?:kan|kon|weet|heb|vond|vind|ben) ik\b[^.!?\n]{0,50}\b(?:niet|geen)\b",
        r"^(?:het spijt me|helaas|sorry|excuses)(?:[,.!:]|$| maar\b| ik\b| we\b)",
        r"\b(?:documenten|passages|context|bronnen|teksten|tekst|fragmenten|informatie)\b[^.!?\n]{0,40}\b(?:vermelden|bevatten|noemen|geven|zeggen|beantwoorden|specificeren|vermeldt|bevat|noemt|geeft|zegt)\b[^.!?\n]{0,30}\b(?:niet|geen)\b",
        r"\b(?:wordt|worden|staat|is|zijn) (?:niet|nergens) (?:expliciet |duidelijk |specifiek )?(?:vermeld|genoemd|gespecificeerd|aangegeven|beschreven|bekend|duidelijk|te vinden)\b",
        r"\bgeen (?:specifieke |concrete |verdere |relevante )?(?:informatie|gegevens|vermelding|antwoord|aanwijzing)\b",
        r"\b(?:niet mogelijk|onmogelijk) (?:om|te)\b[^.!?\n]{0,30}\b(?:bepalen|zeggen|beantwoorden|vast te stellen|weten)\b",
        r"\bniet (?:te|met zekerheid te) (?:bepalen|zeggen|beantwoorden|achterhalen)\b",
        r"\bonvoldoende (?:informatie|gegevens)\b",
        r"\b(?:blijft|is) (?:onbekend|onduidelijk)\b",
    ),
}
# Disclaimers: what the system says about itself, not about the question ("As an AI language
# model, I do not have access to real-time information"); alone they decline nothing.
_DISCLAIMER_SOURCES = (
    r"\b(?:do not|don" + _APOS + r"t|does not|doesn" + _APOS + r"t) have (?:access to |the ability to access |any )?(?:real-?time|current|up-to-date|live|the latest|recent|latest|browsing|personal|the most recent|future|updated)\b",
    r"\bas an ai(?: language model| assistant| model)?\b",
    r"\b(?:my|the) (?:knowledge|training) (?:cut-?off|data|ends|only goes|is limited|extends)\b",
    r"\bi (?:do not|don" + _APOS + r"t|cannot|can" + _APOS + r"t) (?:have the ability to )?(?:browse|access|search) the (?:internet|web)\b",
    r"\bals (?:ki|künstliche intelligenz|sprachmodell)\b|\ben tant qu" + _APOS + r"(?:ia|intelligence artificielle|modèle de langage)\b|"
    r"\bcomo (?:ia|modelo de lenguaje|modelo de linguagem|uma ia|una ia)\b|\bin quanto (?:ia|modello linguistico)\b|\bals (?:ai|taalmodel)\b",
)
# Sentences that carry no answer: pointers elsewhere and pleasantries.
_POINTER_SOURCES = (
    r"\byou (?:can|could|may|might|should|will need to|would need to|need to) (?:try |also |easily |always )?(?:check|visit|consult|contact|look|search|refer|find out|call|ask|verify)\b",
    r"\b(?:it is|it" + _APOS + r"s|i would|i" + _APOS + r"d) (?:best|recommended|advisable|a good idea|always a good idea|recommend(?:ed)?|suggest(?:ed)?|important) (?:to )?(?:check|consult|contact|verify|refer|look|visit|keep an eye|search|confirm)",
    r"^(?:please )?(?:check|consult|contact|refer to|visit|look up|search for)\b",
    r"\b(?:i hope this helps|let me know if|feel free to|if you have (?:any )?(?:other|more|additional|further) questions|happy to help|i would be happy to)\b",
    r"^(?:sure|certainly|of course)[!.,]",
    r"\bfor (?:the most )?(?:accurate|up-to-date|current|latest) (?:and up-to-date )?information\b",
    r"\b(?:sie können|du kannst|bitte (?:prüfen|wenden|schauen|kontaktieren))\b|\bwenden sie sich an\b",
    r"\b(?:vous pouvez|je vous (?:recommande|conseille|suggère)|veuillez (?:consulter|vérifier|contacter))\b",
    r"\b(?:puede|puedes|le recomiendo|te recomiendo|le sugiero|consulte|consulta) (?:consultar|revisar|verificar|contactar|el|la|los|las|con)\b",
    r"\b(?:você pode|recomendo|sugiro|consulte|verifique) (?:consultar|verificar|contatar|o|a|os|as|com)\b",
    r"\b(?:puoi|può|le consiglio|ti consiglio|consulti|consulta|verifica) (?:consultare|verificare|contattare|il|la|i|le|con)\b",
    r"\b(?:u kunt|je kunt|raadpleeg|neem contact op|controleer)\b",
)
# Declines that hedge rather than refuse: no single / definitive answer, hard to say, not
# stated explicitly, unclear whether (with _PRECISION_RX: "the exact number is not given").
_HEDGE_RX = re.compile(
    r"\bno (?:one|single|simple|definitive|clear|straightforward|exact|universal|direct|conclusive|explicit|definite) (?:answer|evidence|statement|mention|information)\b|"
    r"\b(?:difficult|hard|challenging|tricky) to\b|\bnot (?:explicitly|specifically|directly|clearly|expressly)\b|"
    r"\b(?:unclear|uncertain|not clear|inconclusive|not sure|not certain|mixed)\b|"
    r"\b(?:schwer|schwierig|nicht eindeutig|difficile|pas clair|difícil|no está claro|difícil|não está claro|difficile|non è chiaro|moeilijk|niet duidelijk)\b", re.I)
_CONTRAST_RX = re.compile(
    r"^(?:however|but|though|although|that said|nevertheless|nonetheless|still|yet|even so|instead|on the other hand|"
    r"aber|jedoch|allerdings|dennoch|trotzdem|mais|cependant|toutefois|néanmoins|pourtant|pero|sin embargo|no obstante|"
    r"aunque|mas|porém|contudo|no entanto|todavia|embora|ma|tuttavia|però|comunque|eppure|maar|echter|toch|wel)\b", re.I)
_CONCLUSION_RX = re.compile(
    r"^(?:therefore|thus|so|hence|overall|in summary|in conclusion|to summarize|in short|ultimately|consequently|as a result|"
    r"accordingly|based on (?:this|the|these|that)|daher|deshalb|also|somit|insgesamt|folglich|zusammenfassend|donc|par conséquent|"
    r"en résumé|en conclusion|ainsi|por lo tanto|por tanto|en resumen|en conclusión|así que|portanto|por isso|em resumo|assim|"
    r"quindi|pertanto|in sintesi|in conclusione|dunque|dus|daarom|kortom|concluderend|samenvattend)\b", re.I)
_PRECISION_RX = re.compile(
    r"\b(?:exact|exactly|precise|precisely|definitive|definitively|definite|conclusive|conclusively|"
    r"certain|certainty|for sure|for certain|100%|"
    r"genau|genaue[nmrs]?|exakt|exakte[nmrs]?|konkret|konkrete[nmrs]?|sicher|mit sicherheit|précis|précise|précisément|exacte?|exactement|certitude|"
    r"exacto|exacta|exactamente|preciso|precisa|certeza|específic[oa]|exato|exata|exatamente|precisamente|"
    r"esatt[oa]|esattamente|precis[oa]|certezza|specific[oa]|precies|precieze|exacte|zekerheid|specifiek)\b", re.I)
_GENERIC_RX = re.compile(
    r"\b(?:generally|general|typically|usually|often|vary|varies|varying|depend|depends|depending|various|variety|"
    r"common|commonly|several|many|some|any time|in most|normally|im allgemeinen|allgemein|normalerweise|hängt|variiert|"
    r"en général|généralement|dépend|varie|en general|generalmente|depende|varía|em geral|varia|in generale|generalmente|dipende|"
    r"in het algemeen|meestal|hangt|varieert)\b", re.I)
_DIGIT_RX = re.compile(r"\d")
_PROPER_RX = re.compile(r"(?<=[a-z,;:)] )[A-Z][a-z]+")
_TOKEN_TRIM_RX = re.compile(r"^[\s*_`~>#\"'\u2018\u2019\u201c\u201d\u00ab\u00bb()\[\]-]+|[\s*_`~\"'\u2018\u2019\u201c\u201d\u00ab\u00bb()\[\].!?,;:-]+$")
_TOKEN_LABEL_RX = re.compile(r"^(?:final answer|answer|response|output|result|reply|claim|antwort|réponse|respuesta|resposta|risposta|antwoord)\s*[:\-\u2013\u2014]\s*", re.I)
_CLAUSE_RX = re.compile(r"[,;]\s+(?=(?:but|however|though|although|yet|aber|jedoch|mais|cependant|pero|sin embargo|mas|porém|ma|però|tuttavia|maar)\b)", re.I)
_WORDS_RX = re.compile(r"[^\W\d_]{2,}")
_BULLET_RX = re.compile(r"^\s*(?:[-*\u2022]|\d{1,3}[.)])\s+")
# Each group of cues runs only on a text holding one of its trigger words (speed: one big
# alternation costs ~0.3 ms per response; tests check that a trigger never hides a cue).
_DECLINE_TRIGGERS = {
    "en_first": "i i'm i\u2019m sorry apologies apologize apologise regrettably unfortunately afraid unable",
    "en": "nothing only isn't isn\u2019t aren't aren\u2019t wasn't wasn\u2019t not no cannot unable unclear unknown uncertain impossible difficult hard challenging tricky insufficient "
          "inadequate lack limited without please clarify specify against outside beyond inconclusive undetermined "
          "none n/a unspecified can't can\u2019t couldn't couldn\u2019t don't don\u2019t doesn't doesn\u2019t didn't "
          "didn\u2019t unknown",
    "de": "nicht kein keine keinen keinem keiner keines leid leider entschuldigung unklar unbekannt nirgends",
    "fr": "ne pas aucun aucune désolé désolée malheureusement hélas pardon impossible difficile insuffisant "
          "insuffisante insuffisants insuffisantes inconnu inconnue incertain incertaine floue flou",
    "es": "siento lamento disculpa disculpe lamentablemente desafortunadamente perdón imposible difícil insuficiente "
          "insuficientes sin desconocido desconocida incierto incierta ninguna puedo pude podría sé tengo encontré "
          "estoy dispongo cuento se está es consta hay documento documentos pasaje pasajes contexto fuente fuentes "
          "texto textos fragmento fragmentos",
    "pt": "não desculpe desculpa lamento infelizmente muito impossível difícil sem desconhecido desconhecida incerto "
          "incerta nenhuma informações documento documentos passagem passagens contexto fonte fontes texto textos "
          "trecho trechos excerto excertos",
    "it": "non dispiace purtroppo spiacente scuso scusa scusi impossibile difficile insufficienti senza sconosciuto "
          "sconosciuta incerto incerta chiaro chiara ignoto ignota nessuna documenti passaggi passi contesto fonti "
          "testi estratti",
    "nl": "niet geen spijt helaas sorry excuses onmogelijk onvoldoende onbekend onduidelijk nergens",
}
_DECLINE_GROUPS: tuple = ()      # (trigger words, compiled cues) per group: compiled when first read


def _decline_groups() -> tuple:
    global _DECLINE_GROUPS
    if not _DECLINE_GROUPS:
        _DECLINE_GROUPS = tuple((frozenset(_DECLINE_TRIGGERS[g].split()),
                                 re.compile("|".join("(?:%s)" % s for s in src), re.I | re.M))
                                for g, src in _DECLINE_SOURCES.items())
    return _DECLINE_GROUPS


_POINTER_RX = re.compile("|".join("(?:%s)" % s for s in _POINTER_SOURCES), re.I | re.M)
_DISCLAIMER_RX = re.compile("|".join("(?:%s)" % s for s in _DISCLAIMER_SOURCES), re.I | re.M)
_PASSAGE_RX = re.compile(r"\b(?:passages?|context|documents?|text|sources?|excerpts?|dokumente?n?|quellen?|documents?|fuentes?|fontes?|fonti|documenti|bronnen|documenten)\b", re.I)

# Punctuation to spaces (apostrophes and "/" kept: "can't", "n/a"), to split a text into words.
_SPLIT_TABLE = str.maketrans({c: " " for c in "!\"#$%&()*+,-.:;<=>?@[\\]^_`{|}~\u201c\u201d\u2018\u00ab\u00bb\u2013\u2014\u2026\u00bf\u00a1"})
_SPLIT_BYTES = bytes(32 if c in _SPLIT_TABLE and c < 128 else c for c in range(256))    # _SPLIT_TABLE on ASCII
_DISCLAIMER_TRIGGERS = frozenset("ai ki ia knowledge training sprachmodell taalmodel modelo modello "
                                 "don't don\u2019t doesn't doesn\u2019t cannot can't can\u2019t not".split())


_ANY_TRIGGER = frozenset(" ".join(_DECLINE_TRIGGERS.values()).split()) | _DISCLAIMER_TRIGGERS


def _decline_rxs(low: str) -> tuple:
    """The decline-cue groups whose trigger words the lower-cased text holds, and whether the
    disclaimer cues may apply."""
    words = (low.encode().translate(_SPLIT_BYTES).decode() if low.isascii() else low.translate(_SPLIT_TABLE)).split()
    if "n't" in low or "n\u2019t" in low:
        words.append("not")
    elif _ANY_TRIGGER.isdisjoint(words):     # no trigger word at all (most answers): no group
        return (), False
    words = set(words)
    groups = tuple(rx for trig, rx in (_DECLINE_GROUPS or _decline_groups()) if not trig.isdisjoint(words))
    return groups, not _DISCLAIMER_TRIGGERS.isdisjoint(words)


# _SPLIT_BYTES with the ASCII separators str.split() splits at and bytes.split() does not
# (\x1c-\x1f): the bytes words of an ASCII text are then its str words (plain_answer)
_SPLIT_WS_BYTES = bytes(32 if 0x1c <= c <= 0x1f else b for c, b in enumerate(_SPLIT_BYTES))
_ANY_TRIGGER_BYTES = frozenset(w.encode() for w in _ANY_TRIGGER if w.isascii())


def plain_answer(text: str, low: str, token: str, first: str) -> bool:
    """Whether ``read_refusal(text, token)`` is surely ``(answer, "", 0)``, found without the
    reader: ``text`` (stripped; ``low``: its lower-cased form) is ASCII, at most REFUSAL_WINDOW
    characters, holds no trigger word of any decline cue (_decline_rxs: its words, no "n't"),
    and cannot be the token (refusal_layout's "token" case needs ``first``, the token's first
    word, in a text at most 60 characters longer than the token).  False proves nothing."""
    if len(text) > REFUSAL_WINDOW or not low.isascii() or "n't" in low or "`" in low or low == token:
        return False
    if len(text) <= len(token) + 60 and (not token or first in low):
        return False
    return _ANY_TRIGGER_BYTES.isdisjoint(low.encode().translate(_SPLIT_WS_BYTES).split())


def token_form(text: str) -> str:
    """The claim with Markdown, quotes, a leading label and closing punctuation taken off, lower-cased."""
    t = text.strip()
    if len(t) > 200:
        return t.lower()
    prev = None
    while prev != t:
        prev = t
        t = _TOKEN_TRIM_RX.sub("", t)
        t = _TOKEN_LABEL_RX.sub("", t)
    return " ".join(t.lower().split())


def sentences(text: str) -> List[str]:
    """Sentences (``split_sentences``) and lines of ``text``; a contrast clause (", but ...") is a
    unit of its own; list bullets and Markdown emphasis are taken off."""
    out = []
    for start, end in split_sentences(text):
        for part in text[start:end].split("\n"):
            part = _BULLET_RX.sub("", part).strip(" \t*_#>")
            if _WORDS_RX.search(part):
                out.extend(c for c in _CLAUSE_RX.split(part) if c)
    return out


def refusal_layout(text, token: str = REFUSAL, extra=()) -> Tuple[str, List[str], List[str], int]:
    """How a response is laid out for the refusal reading: (case, sentences, kinds, pattern).

    case: "empty", "token" (the refusal token in any dress), "none" (no decline cue),
    "declines" (declines and pointers only) or "mixed" (declines and content); kinds per
    sentence: D decline, M pointer or pleasantry, C content; pattern: the index + 1 of the
    first ``extra`` (source, regex) pair that marked a decline (0: none).  The text is read in
    its text_form (Unicode spaces, apostrophes, fullwidth forms, any script's digits)."""
    t = text_form((text or "").strip())
    if not t:
        return "empty", [], [], 0
    tok = token.strip().lower()
    low = t.lower()
    if low == tok or (len(t) <= len(tok) + 60 and (not tok or tok.split(None, 1)[0] in low)   # (its first word: cheap)
                      and tok in " ".join(low.split()) and token_form(t) == tok):
        return "token", [], [], 0
    if len(t) > REFUSAL_WINDOW:
        half = REFUSAL_WINDOW // 2
        t = t[:half] + "\n" + t[-half:]
    groups, disclaim = _decline_rxs(low if len(t) <= REFUSAL_WINDOW else t.lower())
    if not groups and not disclaim and not extra:
        return "none", [], [], 0
    if (not any(rx.search(t) for rx in groups) and not (disclaim and _DISCLAIMER_RX.search(t))
            and not any(rx.search(t) for _, rx in extra)):
        cut = split_sentences(t[:300])
        first = t[cut[0][0]:cut[0][1]].strip() if len(cut) > 1 else t   # a cue that is a whole sentence: "Unknown. ..."
        if first == t or not any(rx.search(first) for rx in groups):
            return "none", [], [], 0
    sents = sentences(t)
    kinds = []
    pat = 0
    for s in sents:
        m = next((n for n, (_, rx) in enumerate(extra, 1) if rx.search(s)), 0) if extra else 0
        if m:
            kinds.append("D")
            pat = pat or m
        elif any(rx.search(s) for rx in groups):
            kinds.append("D")
        elif disclaim and _DISCLAIMER_RX.search(s):
            kinds.append("K")
        elif _POINTER_RX.search(s):
            kinds.append("M")
        else:
            kinds.append("C")
    if "D" not in kinds and "K" not in kinds:
        return "none", sents, kinds, 0
    return ("mixed" if "C" in kinds else "declines"), sents, kinds, pat


# The bottom line of a mixed English response (declines and content) is weighed by a logistic
# model over refusal_features: where the declines sit, whether the content opens with a
# contrast, carries a number or a name, hedges, points elsewhere, and the words of the
# declining and the content sentences.  Fitted on the fit halves of the labelled sets (and the
# written English rows) by ``make fit-refusal`` (bench/fit_refusal.py writes
# bench/refusal_fit.json; ``--check`` refits and verifies the numbers below byte for byte).
# A response that is not English (few English function words) keeps the rules above: the
# model has no features for it.  Figures: docs/refusals.md.
# Fitted by `make fit-refusal` (bench/fit_refusal.py; copied from bench/refusal_fit.json).
REFUSAL_MODEL = {"bias": 1.467212, "english": 0.1, "threshold": 0.42,
                 "weights": {
                             "content_commits": -0.180891, "content_concludes": -0.324767,
                             "content_digit": -0.768654, "content_generic": 0.243396,
                             "content_name": 0.659084, "content_share": -0.656985,
                             "content_sources": -0.364365, "content_words": -0.519401, "contrast": -1.861348,
                             "decline_hedge": -0.216656, "decline_precision": -0.141984,
                             "first_decline": 0.747063, "first_disclaimer": -0.747063,
                             "last_decline": 1.350169, "last_firm": 0.254163,
                             "last_firm_conclusion": 0.090279, "pointer": 0.060465}}
_EN_FUNCTION = frozenset("the of and to that it this not be for with are were from have has does there what "
                         "which by or its their would could should about".split())     # none a word of de fr es pt it nl
_COMMIT_RX = re.compile(r"\b(?:likely|probably|possibly|appears?|seems?|suggests?|suggesting|indicates?|implies|"
                        r"approximately|roughly|estimated|around|about|may be|might be|could be|would be)\b", re.I)
_FEATURE_WORD_RX = re.compile(r"[a-z][a-z'’]+")


def english_share(words: List[str]) -> float:
    """Share of ``words`` (lower-cased) that are common English function words."""
    return sum(1 for w in words if w in _EN_FUNCTION) / len(words) if words else 0.0


def refusal_features(sents: List[str], kinds: List[str]) -> Dict[str, float]:
    """Features of a mixed response (sentences and their kinds, as refusal_layout gives them)
    for REFUSAL_MODEL: structural ones by name, and "d:WORD" / "c:WORD" for the words of the
    declining (and disclaimer) sentences and of the content sentences."""
    core = [(s, k) for s, k in zip(sents, kinds) if k != "M"]
    dec = [s for s, k in core if k in "DK"]
    con = [s for s, k in core if k == "C"]
    f = {}
    if core:
        first, last = core[0], core[-1]
        f["first_decline"] = 1.0 if first[1] == "D" else 0.0
        f["first_disclaimer"] = 1.0 if first[1] == "K" else 0.0
        f["last_decline"] = 1.0 if last[1] in "DK" else 0.0
        firm = last[1] == "D" and not _HEDGE_RX.search(last[0]) and not _PRECISION_RX.search(last[0])
        f["last_firm"] = 1.0 if firm else 0.0
        f["last_firm_conclusion"] = 1.0 if firm and _CONCLUSION_RX.match(last[0]) else 0.0
        i = next((n for n, (_, k) in enumerate(core) if k == "C"), None)
        f["contrast"] = 1.0 if i is not None and i > 0 and _CONTRAST_RX.match(core[i][0]) else 0.0
        f["content_share"] = len(con) / len(core)
    f["content_digit"] = 1.0 if any(_DIGIT_RX.search(s) for s in con) else 0.0
    f["content_name"] = 1.0 if any(_PROPER_RX.search(s) for s in con) else 0.0
    f["content_generic"] = 1.0 if any(_GENERIC_RX.search(s) for s in con) else 0.0
    f["decline_hedge"] = 1.0 if dec and all(_HEDGE_RX.search(s) for s in dec) else 0.0
    f["decline_precision"] = 1.0 if any(_PRECISION_RX.search(s) for s in dec) else 0.0
    f["pointer"] = 1.0 if "M" in kinds else 0.0
    f["content_commits"] = 1.0 if any(_COMMIT_RX.search(s) for s in con) else 0.0
    f["content_concludes"] = 1.0 if any(_CONCLUSION_RX.match(s) for s in con) else 0.0
    f["content_sources"] = 1.0 if any(_PASSAGE_RX.search(s) for s in con) else 0.0
    cw = _FEATURE_WORD_RX.findall(" ".join(con).lower())
    f["content_words"] = min(len(cw), 100) / 100.0
    for w in set(_FEATURE_WORD_RX.findall(" ".join(dec).lower())):
        f["d:" + w] = 1.0
    for w in set(cw):
        f["c:" + w] = 1.0
    return f


def weighed_layout(case: str, sents: List[str], kinds: List[str], english: float) -> bool:
    """Whether REFUSAL_MODEL decides a response of this layout: mixed, opening with a decline or a
    disclaimer, English."""
    if case != "mixed" or next(k for k in kinds if k != "M") == "C":
        return False
    return english_share(_FEATURE_WORD_RX.findall(" ".join(sents).lower())) >= english


def refusal_score(feats: Dict[str, float], model: Optional[dict] = None) -> float:
    """REFUSAL_MODEL's probability that a response with ``feats`` is a refusal."""
    model = model or REFUSAL_MODEL
    w = model["weights"]
    z = model["bias"] + math.fsum(w[k] * v for k, v in feats.items() if k in w)
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


def read_refusal(text, token: str = REFUSAL, extra=(), model: Optional[dict] = None) -> Tuple[str, str, int]:
    """_read_refusal; never raises on text: a response it cannot read is read as an answer
    (read_problem names it)."""
    try:
        return _read_refusal(text, token, extra, model)
    except Exception as exc:          # noqa: BLE001 - a reader's bug must not end the run (issue 44)
        read_problem(problem_text("the refusal reading", exc))
        return KIND_ANSWER, "", 0


def _read_refusal(text, token: str, extra, model: Optional[dict]) -> Tuple[str, str, int]:
    """(kind, reason, pattern) for one response: kind is answer / refusal / partial_refusal;
    reason a short text for the items file ("" for an answer without a caveat); pattern
    as in ``refusal_layout``.  The bottom line of a response holding both declines and
    content (sentences without pointers and pleasantries):

    * it leads with content: an answer, unless its last sentence is a firm decline that
      concludes ("Therefore, the answer cannot be determined ..."): a refusal; an answer
      whose last sentence is a firm decline is a partial refusal;
    * it leads with a decline or a disclaimer: a refusal, unless its first content opens
      with a contrast ("I cannot confirm the exact date, but it was in 1998") and it does
      not end with a decline (other than one about precision): an answer.

    A firm decline is a decline that neither hedges (_HEDGE_RX: "no definitive answer",
    "difficult to say", "not explicitly stated") nor doubts only precision (_PRECISION_RX)."""
    case, sents, kinds, pat = refusal_layout(text, token, extra)
    if case == "token":
        return KIND_REFUSAL, "the refusal token", 0
    if case in ("empty", "none"):
        return KIND_ANSWER, "", 0
    quote = next(s for s, k in zip(sents, kinds) if k in "DK")[:60]
    if case == "declines":
        return KIND_REFUSAL, "declines, answers nothing: " + quote, pat
    core = [(s, k) for s, k in zip(sents, kinds) if k != "M"]
    firm = [k == "D" and not _HEDGE_RX.search(s) and not _PRECISION_RX.search(s) for s, k in core]
    model = model or REFUSAL_MODEL
    if model["weights"] and weighed_layout(case, sents, kinds, model["english"]):
        p = refusal_score(refusal_features(sents, kinds), model)
        if p >= model["threshold"]:
            return KIND_REFUSAL, "its bottom line declines (%.2f): %s" % (p, quote), pat
        return KIND_ANSWER, "declines, then answers: " + quote, 0
    if core[0][1] == "C":
        last = core[-1][0]
        if firm[-1] and _CONCLUSION_RX.match(last):
            return KIND_REFUSAL, "concludes that it cannot answer: " + last[:60], pat
        if firm[-1]:
            return KIND_PARTIAL, "answers, then declines: " + last[:60], pat
        return KIND_ANSWER, "answer with a caveat: " + quote, 0
    if core[-1][1] == "D" and not _PRECISION_RX.search(core[-1][0]):
        return KIND_REFUSAL, "declines first and last: " + quote, pat
    if _CONTRAST_RX.match(next(s for s, k in core if k == "C")):
        return KIND_ANSWER, "declines, then answers: " + quote, 0
    return KIND_REFUSAL, "declines; what follows does not answer: " + quote, pat
