/**
 * ISO 639-1 (two letters, what BCP 47 tags start with) to ISO 639-2/T (three letters): MP4 stores
 * a track's language as three letters only (ffmpeg writes nothing for `en`), and Matroska's
 * Language element is ISO 639-2 as well.
 */
const ISO_639_1_TO_2: Record<string, string> = Object.fromEntries(
  (
    'aa aar ab abk ae ave af afr ak aka am amh an arg ar ara as asm av ava ay aym az aze ba bak ' +
    'be bel bg bul bh bih bi bis bm bam bn ben bo bod br bre bs bos ca cat ce che ch cha co cos ' +
    'cr cre cs ces cu chu cv chv cy cym da dan de deu dv div dz dzo ee ewe el ell en eng eo epo ' +
    'es spa et est eu eus fa fas ff ful fi fin fj fij fo fao fr fra fy fry ga gle gd gla gl glg ' +
    'gn grn gu guj gv glv ha hau he heb hi hin ho hmo hr hrv ht hat hu hun hy hye hz her ia ina ' +
    'id ind ie ile ig ibo ii iii ik ipk io ido is isl it ita iu iku ja jpn jv jav ka kat kg kon ' +
    'ki kik kj kua kk kaz kl kal km khm kn kan ko kor kr kau ks kas ku kur kv kom kw cor ky kir ' +
    'la lat lb ltz lg lug li lim ln lin lo lao lt lit lu lub lv lav mg mlg mh mah mi mri mk mkd ' +
    'ml mal mn mon mr mar ms msa mt mlt my mya na nau nb nob nd nde ne nep ng ndo nl nld nn nno ' +
    'no nor nr nbl nv nav ny nya oc oci oj oji om orm or ori os oss pa pan pi pli pl pol ps pus ' +
    'pt por qu que rm roh rn run ro ron ru rus rw kin sa san sc srd sd snd se sme sg sag si sin ' +
    'sk slk sl slv sm smo sn sna so som sq sqi sr srp ss ssw st sot su sun sv swe sw swa ta tam ' +
    'te tel tg tgk th tha ti tir tk tuk tl tgl tn tsn to ton tr tur ts tso tt tat tw twi ty tah ' +
    'ug uig uk ukr ur urd uz uzb ve ven vi vie vo vol wa wln wo wol xh xho yi yid yo yor za zha ' +
    'zh zho zu zul'
  )
    .split(' ')
    .flatMap((code, i, all) => (i % 2 === 0 ? [[code, all[i + 1] ?? 'und']] : [])),
);

/**
 * The ISO 639-2 code of a BCP 47 tag's language (`pt-BR` → `por`), a three-letter tag's own
 * language as it is, `und` for what has none.
 */
export function iso639Part2(tag: string): string {
  const language = tag.split('-')[0]?.toLowerCase() ?? '';
  if (/^[a-z]{3}$/.test(language)) return language;
  return ISO_639_1_TO_2[language] ?? 'und';
}

/** ISO 639-2/B codes (bibliographic, what Matroska files often hold) that differ from /T. */
const ISO_639_2_B_TO_T: Record<string, string> = Object.fromEntries(
  (
    'alb sqi arm hye baq eus bur mya chi zho cze ces dut nld fre fra geo kat ger deu gre ell ' +
    'ice isl mac mkd mao mri may msa per fas rum ron slo slk tib bod wel cym'
  )
    .split(' ')
    .flatMap((code, i, all) => (i % 2 === 0 ? [[code, all[i + 1] ?? 'und']] : [])),
);
const ISO_639_2_TO_1: Record<string, string> = Object.fromEntries(
  Object.entries(ISO_639_1_TO_2).map(([two, three]) => [three, two]),
);

/**
 * A track's language as a BCP 47 tag, as HLS and DASH manifests take it: a three-letter ISO 639-2
 * code (/T or /B) with a two-letter one becomes it (`eng`, `fre` → `en`, `fr`), as BCP 47 asks for
 * the shortest code; any other tag is kept as it is.
 */
export function bcp47Language(tag: string): string {
  const code = tag.toLowerCase();
  if (!/^[a-z]{3}$/.test(code)) return tag;
  return ISO_639_2_TO_1[ISO_639_2_B_TO_T[code] ?? code] ?? tag;
}
