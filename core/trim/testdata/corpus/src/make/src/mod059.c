#include <stdio.h>

int mod059(int x)
{
    return x + 59;
}
